"""Short ways the tests read a whole file through the package's readers (the package reads
files through its registries in streams; these read one small file whole)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from clinsent.corpus.notes import NotesSpec, read_notes
from clinsent.evaluation.sts_data import StsSet, sts_format


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
