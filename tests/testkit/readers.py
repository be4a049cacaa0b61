"""Short ways the tests read a whole file through the package's readers (the package reads
files through its registries in streams; these read one small file whole)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pyarrow as pa

from clinsent.corpus.notes import NOTE_SCHEMA, NotesSpec, ReadStats, iter_notes
from clinsent.evaluation.sts_data import StsSet, sts_format


def read_notes(spec: NotesSpec, stats: ReadStats | None = None) -> pd.DataFrame:
    """All kept notes of a small input in one DataFrame, sorted by row_id (the package reads
    them in blocks: :func:`clinsent.corpus.notes.iter_notes`)."""
    tables = list(iter_notes(spec, stats))
    table = pa.concat_tables(tables) if tables else NOTE_SCHEMA.empty_table()
    return table.to_pandas().sort_values("row_id", kind="stable").reset_index(drop=True)


def read_noteevents(
    path: str | Path, categories: list[str] | None, drop_errors: bool = True, block_mb: int = 1
) -> pd.DataFrame:
    """NOTEEVENTS.csv(.gz) as one DataFrame."""
    cats = tuple(categories) if categories else None
    return read_notes(NotesSpec(str(path), "noteevents_csv", cats, drop_errors, block_mb=block_mb))


def read_sts(name: str, path: str | Path, fmt: str, gold: str | Path | None = None, scale_max: float = 5.0) -> StsSet:
    """Every pair of a file whose layout holds no splits (``sts_tsv``, ``n2c2_sts``)."""
    return sts_format(name, fmt).read(name, Path(path), gold, None, None, scale_max)[0]


def model_path_name(name: str) -> str:
    """A model name as MTEB writes it in a path ("/" -> "__", " " -> "_")."""
    return name.replace("/", "__").replace(" ", "_")
