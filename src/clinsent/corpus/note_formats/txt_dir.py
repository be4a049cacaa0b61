"""``txt_dir``: one note per ``*.txt`` file (recursively, in sorted path order); the row id is
the file's rank (1, 2, ...), the note id its relative path.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa

from clinsent.corpus.notes import (
    NOTE_READERS,
    NotesSpec,
    ReadStats,
    check_notes,
    note_table,
)
from clinsent.errors import InputError

log = logging.getLogger(__name__)


@NOTE_READERS.register(
    "txt_dir",
    check=lambda path, entry, where: check_notes(path, entry, file=False),
    reads=("block_mb",),
)
def iter_txt_dir(spec: NotesSpec, stats: ReadStats) -> Iterator[pa.Table]:
    root = Path(spec.path)
    if not root.is_dir():
        raise InputError(root, "not a folder", "with `notes.format: txt_dir`, `notes.path` is a folder of .txt notes")
    files = sorted(p for p in root.rglob("*.txt") if p.is_file())
    if not files:
        raise InputError(root, "no *.txt file in the folder", "put one note per .txt file in `notes.path`")
    budget = spec.block_mb << 20
    ids: list[int] = []
    names: list[str] = []
    texts: list[str] = []
    size = 0
    for rank, f in enumerate(files, start=1):
        raw = f.read_bytes()
        stats.notes_read += 1
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            text = raw.decode("utf-8", errors="replace")
            stats.decoded_with_replacement += 1
            log.warning("%s: not UTF-8; undecodable bytes replaced by U+FFFD", f)
        ids.append(rank)
        names.append(f.relative_to(root).as_posix())
        texts.append(text)
        size += len(raw)
        if size >= budget:
            yield note_table(
                pa.array(ids, pa.int64()), pa.array(names, pa.string()), pa.array(texts, pa.string()), len(ids)
            )
            ids, names, texts, size = [], [], [], 0
            if spec.blocks is not None and rank >= spec.blocks:  # the dry run's check: the first block
                return
    if ids:
        yield note_table(
            pa.array(ids, pa.int64()), pa.array(names, pa.string()), pa.array(texts, pa.string()), len(ids)
        )
