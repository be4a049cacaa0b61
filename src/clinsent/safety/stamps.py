"""Identity by content at the cost of a stat: a raw input's content key, cached against the stat
of each of its files, as git's index caches a file's hash against its stat.

The key of a file is the SHA-256 of its bytes; of a folder (a model, a folder of ``.txt`` notes),
the SHA-256 of its files' relative names, sizes and keys, hidden files left out (the tool's own
locks and working folders), so a folder's key changes when a file is added, removed, renamed or
rewritten. A file is read again only when its stat differs from the one recorded with its key:
inode, size, modification time or change time. The change time is the kernel's own and cannot be
set back: ``cp -p``, ``rsync -t``, ``touch -r`` and unpacking an archive restore a file's
modification time, never its change time, so a file rewritten with its old modification time is
hashed again, and a file touched but unchanged is hashed again and found the same.

What it costs (``docs/concepts.md``, staleness; measured by ``bench/bench_input_keys.py``, in
``bench/results/input_keys.md``): the first key of a file reads it once (SHA-256 through OpenSSL,
about 1.7 GB/s on one core of the development machine, a quarter of ``sha256sum``'s time: a 4 GB
MIMIC notes file in about 2.5 s where the disk keeps up, longer where it is slower); every later
run, a stat per file (about 12 µs), and a file is read again only when it changed or was touched.

This module only reads: the key files and their stat records are written by the main process of
a run (:mod:`clinsent.runner.staleness`), through the guarded writer.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clinsent.safety.content import feed_file

Stat = tuple[int, int, int, int]  # inode, size, modification and change time (ns)


def stat_of(path: str | Path) -> Stat:
    """What a file's key is cached against (see the module)."""
    st = os.stat(path)
    return st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def files_of(path: str | Path) -> list[tuple[str, Path]]:
    """(relative name, file) of an input: ``("", path)`` for a file; a folder's files, recursively,
    in name order, hidden ones (a name part starting with ``.``) left out."""
    path = Path(path)
    if not path.is_dir():
        return [("", path)]
    found = []
    for root, dirs, names in os.walk(path):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in names:
            if not name.startswith("."):
                file = Path(root) / name
                found.append((file.relative_to(path).as_posix(), file))
    return sorted(found)


@dataclass(frozen=True)
class Keyed:
    """An input's content key and what it was computed from.

    ``key``: SHA-256 (hex) of the content (see the module); ``folder``: a folder, not a file; ``size``:
    its bytes (a folder's files together); ``files``: each file's stat and key, the record a later
    call compares with; ``hashed``: bytes read to compute it this time (0: every stat matched);
    ``newest``: the latest modification time of its files (ns)."""

    key: str
    folder: bool
    size: int
    files: dict[str, tuple[Stat, str]] = field(repr=False)
    hashed: int = 0
    newest: int = 0

    def record(self) -> dict[str, Any]:
        """The stat record kept beside the key (JSON): each file's stat and key."""
        return {"folder": self.folder, "files": {name: [*st, key] for name, (st, key) in self.files.items()}}

    def summary(self) -> dict[str, Any]:
        """What a key file holds: changes only when the content does (never with a stat)."""
        return {"folder": self.folder, "bytes": self.size, "files": len(self.files), "sha256": self.key}


def recorded(record: Mapping[str, Any] | None) -> dict[str, tuple[Stat, str]]:
    """The files of a stat record (:meth:`Keyed.record`); an unreadable record is none (hashed again)."""
    if not isinstance(record, Mapping) or not isinstance(record.get("files"), Mapping):
        return {}
    out: dict[str, tuple[Stat, str]] = {}
    for name, row in record["files"].items():
        if isinstance(row, list) and len(row) == 5 and all(isinstance(v, int) for v in row[:4]):
            out[str(name)] = ((row[0], row[1], row[2], row[3]), str(row[4]))
    return out


def key_of(path: str | Path, record: Mapping[str, Any] | None = None) -> Keyed:
    """``path``'s content key, reading only the files whose stat differs from ``record``'s (a
    previous :meth:`Keyed.record`; None: every file is read)."""
    known = recorded(record)
    files: dict[str, tuple[Stat, str]] = {}
    hashed = newest = 0
    for name, file in files_of(path):
        st = stat_of(file)
        before = known.get(name)
        if before is not None and before[0] == st:
            key = before[1]
        else:
            key = str(feed_file(hashlib.sha256(), file).hexdigest())
            after = stat_of(file)
            if after != st:  # written while read: a stat no file has, so the next call reads it again
                st = (after[0], after[1], -1, -1)
            hashed += after[1]
        files[name] = (st, key)
        newest = max(newest, st[2])
    folder = Path(path).is_dir()
    if folder:
        h = hashlib.sha256()
        for name, (st, file_key) in files.items():
            h.update(f"{name}\0{st[1]}\0{file_key}\n".encode())
        key = h.hexdigest()
    else:
        key = files[""][1]
    size = sum(st[1] for st, _ in files.values())
    return Keyed(key, folder, size, files, hashed, newest)
