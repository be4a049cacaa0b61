"""Whether the data a config says is demo data is the packaged demo data, recognised by content.

A model card's data-use notice says "generated demo data (no patient's notes)" only for the demo
notes (:mod:`clinsent.release.card`); a config key inherited from the demo config must not say so of
a hospital's notes. So the claim ``model_card.data_use.notes: demo`` is checked at dry run
against the notes themselves: every note the config's reader keeps (its format, its categories)
must be one of the notes the package's seeded generator writes (``resources/demo``'s
NOTEEVENTS), compared by the SHA-256 of its text. The same notes in another layout (MIMIC-IV-Note,
parquet, a folder of .txt files) or another place are still demo; one note of anyone else's is
not. Files larger than :data:`LIMIT` are not read: no demo file is that large.

Every other source a card describes (``training_data`` and ``sentence_corpora`` entries) is demo
only when each of its files is, byte for byte, one of the demo files the seeded generators write
(:func:`clinsent.demo.files.write_demo_files`, regenerated here into a temporary folder, about
0.5 s): the demo MedNLI file with one real row added is not.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

LIMIT = 16 << 20  # bytes: the demo notes are about 1.2 MB


def _digest(text: str) -> str:
    return hashlib.sha256(text.strip().encode("utf-8")).hexdigest()


@functools.cache
def demo_digests() -> frozenset[str]:
    """The SHA-256 of every packaged demo note's text (regenerated from the seeded generator, 0.1 s)."""
    from clinsent.demo.documents import add_category_notes
    from clinsent.demo.notes import generate_notes

    return frozenset(_digest(r["TEXT"]) for r in add_category_notes(generate_notes()))


@functools.cache
def demo_file_digests() -> frozenset[str]:
    """The SHA-256 of every demo input file the seeded generators write."""
    import tempfile

    from clinsent.demo.files import write_demo_files
    from clinsent.safety.content import sha256_file

    with tempfile.TemporaryDirectory(prefix="clinsent-demo-") as folder:
        write_demo_files(Path(folder))
        return frozenset(sha256_file(p) for p in Path(folder).iterdir() if p.is_file())


def is_demo_file(path: str | Path) -> bool:
    """Whether ``path`` is, byte for byte, one of the demo input files (a folder never is)."""
    from clinsent.safety.content import sha256_file

    path = Path(path)
    return path.is_file() and path.stat().st_size <= LIMIT and sha256_file(path) in demo_file_digests()


def _size(paths: list[str]) -> int:
    total = 0
    for p in map(Path, paths):
        files = p.rglob("*") if p.is_dir() else [p]
        for f in files:
            total += f.stat().st_size if f.is_file() else 0
            if total > LIMIT:
                return total
    return total


def are_demo_notes(notes: Mapping[str, Any]) -> bool:
    """Whether every note the ``notes`` config block reads is a packaged demo note (and there is one)."""
    from clinsent.corpus.notes import NotesSpec, iter_notes

    spec = NotesSpec.from_config(notes)
    if _size(spec.paths) > LIMIT:
        return False
    known, seen = demo_digests(), 0
    for table in iter_notes(spec):
        for text in table["text"].to_pylist():
            if _digest(text) not in known:
                return False
            seen += 1
    return seen > 0
