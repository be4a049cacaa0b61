"""Identity by content: what a cache entry or a resumable working folder is keyed by.

A derived artefact (an ONNX export and its int8 graph, a shard's finished chunks) is reused
only when the bytes it was made from are the same. Names, sizes and modification times are not
enough: a model folder unpacked from a tarball with fixed times, or a file rewritten within a
second, keeps all three while its weights change. So the key is a SHA-256 of the files' bytes
(a folder's: every file but hidden ones, by relative name and content), read in 1 MB blocks;
about 0.2 s for a 90 MB model here.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path
from typing import Any


def check_regular(path: str | Path, fix: str = "point the config at the file itself") -> None:
    """Refuse, in one line, a path that is a FIFO, a socket or a device: reading one can wait
    forever (a dry run that hangs without a word) or never end. A missing path is left to the
    caller."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        from clinsent.errors import InputError

        kind = (
            "a FIFO"
            if stat.S_ISFIFO(mode)
            else "a socket"
            if stat.S_ISSOCK(mode)
            else "a device or another special file"
        )
        raise InputError(path, f"is {kind}, not a regular file: reading it could wait forever", fix)


def feed_file(h: Any, path: str | Path) -> Any:
    """``h`` (a hashlib hash) updated with a file's bytes, read in 1 MB chunks (a FIFO, a socket or
    a device is refused first: :func:`check_regular`)."""
    check_regular(path)
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h


def sha256_file(path: str | Path) -> str:
    """sha256 of a file's bytes."""
    return str(feed_file(hashlib.sha256(), path).hexdigest())


def content_key(path: str | Path, length: int = 32) -> str:
    """A hex key of ``path``'s bytes: a file's, or a folder's files (hidden ones left out: the
    tool's own lock and working files), each by its relative name and content."""
    path = Path(path)
    h = hashlib.sha256()
    if path.is_dir():
        for file in sorted(p for p in path.rglob("*") if p.is_file() and not _hidden(p.relative_to(path))):
            name = file.relative_to(path).as_posix().encode()
            h.update(len(name).to_bytes(4, "little") + name + file.stat().st_size.to_bytes(8, "little"))
            feed_file(h, file)
    else:
        feed_file(h, path)
    return h.hexdigest()[:length]


def _hidden(relative: Path) -> bool:
    return any(part.startswith(".") for part in relative.parts)
