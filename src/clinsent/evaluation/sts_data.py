"""Read STS evaluation sets.

Formats (config ``eval_sets.<name>.format``; each one registered in :data:`STS_FORMATS`):
- ``sts_tsv``: tab-separated with a header naming ``sentence1``, ``sentence2`` and ``score``;
- ``n2c2_sts``: the n2c2 2019 ClinicalSTS layout, no header, ``s1<TAB>s2<TAB>score``; for the
  test file (``s1<TAB>s2``) give the gold file (one score per line) as ``gold``;
- ``table``: BIOSSES as users have it (and any pair table): a TSV, CSV or parquet file (by
  extension) with columns ``sentence1, sentence2, score`` and optionally ``id`` (the pair id;
  default the 1-based row number) and ``split`` (train/dev/test, BLURB's 64/16/20 for BIOSSES).
  ``split`` picks the rows of one split, from the file's ``split`` column or from a
  ``split_file`` (a TSV/CSV with columns ``id, split``).
TSV files are read without quote handling (``csv.QUOTE_NONE``): clinical sentences contain
quotes; CSV files with standard quoting. Scores must lie in [0, ``scale_max``].
"""

from __future__ import annotations

import csv
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from clinsent.errors import InputError
from clinsent.io.reading import Readers, extra_fields, state_repeats
from clinsent.io.textfile import check_texts, csv_rows, header_lacks, table_header, text_lines

TAB_FIX = "remove the tab inside a sentence (a TSV has no quoting), or write the file as CSV with quoted fields"
CSV_FIX = "quote fields that hold a comma, as CSV does"


@dataclass(frozen=True)
class StsSet:
    name: str
    sentences1: list[str]
    sentences2: list[str]
    scores: np.ndarray
    scale_max: float = 5.0
    pair_numbers: list[int] | None = None  # 1-based positions in the file's pairs (a held-out split)

    def __len__(self) -> int:
        return len(self.scores)

    def unique_sentences(self) -> list[str]:
        """Every distinct sentence of the set, in first-seen order."""
        return list(dict.fromkeys([*self.sentences1, *self.sentences2]))


def _rows(path: Path) -> list[list[str]]:
    try:
        return [
            r
            for _, r in csv_rows(text_lines(path), path, delimiter="\t", quoting=csv.QUOTE_NONE)
            if any(c.strip() for c in r)
        ]
    except FileNotFoundError as exc:
        raise InputError(
            path, "the evaluation file does not exist", "fix `eval_sets.<name>.path` in the config"
        ) from exc


def _score(value: str, path: Path, line: int) -> float:
    return _cell_score(value, f"{path}:{line}", "fix the row, or check the `format` of this eval set")


def read_table(path: str | Path, kind: str = "pairs") -> tuple[list[str], list[list[str]], list[str]]:
    """(header, rows, row names) of a TSV, CSV or parquet table; row names are ``file:line`` (text)
    or ``file row n`` (parquet), for errors."""
    path = Path(path)
    if path.suffix == ".parquet":
        if not path.exists():
            raise InputError(path, f"the {kind} file does not exist", "fix the path in the config")
        df = pd.read_parquet(path)
        header = [str(c) for c in df.columns]
        rows = [["" if v is None else str(v) for v in r] for r in df.itertuples(index=False, name=None)]
        names = [f"{path} row {i}" for i in range(1, len(rows) + 1)]
        for row, name in zip(rows, names, strict=True):
            check_texts(row, name, "write every text without NUL characters")  # a parquet cell can hold one
        return header, rows, names
    if path.suffix == ".csv":
        try:
            raw = [(n, r) for n, r in csv_rows(text_lines(path), path) if any(c.strip() for c in r)]
        except FileNotFoundError as exc:
            raise InputError(path, f"the {kind} file does not exist", "fix the path in the config") from exc
    else:
        raw = list(enumerate(_rows(path), start=1))
    if not raw:
        raise InputError(path, f"the {kind} file is empty", "point the config at a file with a header and rows")
    header = [h.strip() for h in raw[0][1]]
    return header, [r for _, r in raw[1:]], [f"{path}:{n}" for n, _ in raw[1:]]


def _check_pair_columns(path: str | Path, header: list[str]) -> None:
    """A pair table's header line names sentence1, sentence2 and score (the job's read and the dry run's check)."""
    missing = [c for c in ("sentence1", "sentence2", "score") if c not in header]
    if missing:
        raise InputError(
            f"{path}:1",
            header_lacks(header, missing),
            "name the columns sentence1, sentence2 and score (optional: id, split)",
        )


def check_table_header(name: str, path: str | Path, split: str | None, split_file: str | Path | None) -> None:
    """What a pair table's header line must hold for the eval set asking for it, checked while the
    config is read (before any job): the three columns, and a ``split`` column when ``split`` is
    asked without a ``split_file``. The values are never shown."""
    header = table_header(path, STS_FORMATS.names())
    _check_pair_columns(path, header)
    if split is not None and split_file is None and "split" not in header:
        raise InputError(
            f"config: eval_sets.{name}.split",
            f"asks for split {split!r}, and {path} has no split column",
            "add a `split` column (train/dev/test) to the file, give `split_file` (columns id, split), "
            "or leave `split` out to score every pair",
        )


def _split_file(path: str | Path, ids: set[str]) -> dict[str, str]:
    header, rows, names = read_table(path, "split")
    if "id" not in header or "split" not in header:
        raise InputError(
            f"{path}:1",
            header_lacks(header, [c for c in ("id", "split") if c not in header]),
            "give the split file a header `id, split`",
        )
    i, j = header.index("id"), header.index("split")
    out = {}
    for r, where in zip(rows, names, strict=True):
        pair = r[i].strip()
        if pair not in ids:
            raise InputError(
                where,
                f"pair id {pair!r} is not an id of the pair file",
                "use the split file that belongs to this pair file (ids: its `id` column, else 1-based rows)",
            )
        out[pair] = r[j].strip()
    return out


def read_sts_table(
    name: str, path: str | Path, split: str | None, split_file: str | Path | None, scale_max: float
) -> tuple[StsSet, dict[str, int]]:
    """One split (or all rows) of a pair table, and the number of pairs per split of the whole file."""
    header, rows, names = read_table(path)
    _check_pair_columns(path, header)
    col = {c: header.index(c) for c in header}
    for r, where in zip(rows, names, strict=True):
        if len(r) < len(header):
            raise InputError(where, f"{len(r)} field(s), expected {len(header)}", "fix the row")
        extra_fields(r, len(header), where, TAB_FIX if Path(path).suffix != ".csv" else CSV_FIX)
    ids = [r[col["id"]].strip() for r in rows] if "id" in col else [str(i) for i in range(1, len(rows) + 1)]
    splits: list[str | None]
    if split_file is not None:
        by_id = _split_file(split_file, set(ids))
        splits = [by_id.get(i) for i in ids]
    elif "split" in col:
        splits = [r[col["split"]].strip() for r in rows]
    else:
        splits = [None] * len(rows)
    if split is not None and all(s is None for s in splits):
        raise InputError(
            path,
            f"eval_sets.{name} asks for split {split!r}, the file has no split column",
            "add a `split` column (train/dev/test), or give `split_file` (columns id, split)",
        )
    counts: dict[str, int] = {}
    for s in splits:
        counts[s or "all"] = counts.get(s or "all", 0) + 1
    keep = [k for k, s in enumerate(splits) if split is None or s == split]
    if not rows:
        raise InputError(path, "has a header line and no rows", "point the eval set at a file with pairs")
    if not keep:
        raise InputError(
            path, f"no pair is in split {split!r} (splits: {sorted(counts)})", "fix `split` in the config"
        )
    s1 = [rows[k][col["sentence1"]].strip() for k in keep]
    s2 = [rows[k][col["sentence2"]].strip() for k in keep]
    scores = [_cell_score(rows[k][col["score"]], names[k]) for k in keep]
    _check_scale(scores, [names[k] for k in keep], scale_max, name)
    state_repeats(f"eval_sets.{name}", list(zip(s1, s2, scores, strict=True)), [names[k] for k in keep])
    return StsSet(name, s1, s2, np.asarray(scores, dtype=np.float64), scale_max), counts


def _cell_score(value: str, where: str, fix: str = "fix the row") -> float:
    """A gold score: a finite number (``nan``, ``inf`` and words are refused with file:line)."""
    try:
        score = float(value)
    except ValueError:
        # never the cell itself: in a shifted row it may be sentence text (ClinicalSTS is restricted data)
        raise InputError(where, "the score field is not a number", fix) from None
    if not math.isfinite(score):
        raise InputError(where, f"the score is {score} (not a finite number)", fix)
    return score


def _check_scale(scores: list[float], where: list[str], scale_max: float, name: str) -> None:
    for value, at in zip(scores, where, strict=True):
        if not 0.0 <= value <= scale_max:
            raise InputError(
                at,
                f"score {value:g} is outside the scale [0, {scale_max:g}]",
                f"fix the row, or set eval_sets.{name}.scale_max to the file's scale",
            )


Pairs = tuple[
    list[str], list[str], list[float], list[str]
]  # sentences 1 and 2, scores, where each score is (file:line)


def _sts_tsv(path: Path, rows: list[list[str]], gold: str | Path | None) -> Pairs:
    header = [h.strip() for h in rows[0]]
    missing = [c for c in ("sentence1", "sentence2", "score") if c not in header]
    if missing:
        raise InputError(
            f"{path}:1",
            header_lacks(header, missing),
            "add a header `sentence1<TAB>sentence2<TAB>score`, or use format n2c2_sts",
        )
    i1, i2, i3 = (header.index(c) for c in ("sentence1", "sentence2", "score"))
    s1: list[str] = []
    s2: list[str] = []
    scores: list[float] = []
    for line, r in enumerate(rows[1:], start=2):
        if len(r) <= max(i1, i2, i3):
            raise InputError(f"{path}:{line}", f"{len(r)} field(s), expected {len(header)}", "fix the row")
        extra_fields(r, len(header), f"{path}:{line}", TAB_FIX)
        s1.append(r[i1].strip())
        s2.append(r[i2].strip())
        scores.append(_score(r[i3], path, line))
    return s1, s2, scores, [f"{path}:{2 + i}" for i in range(len(scores))]


def _n2c2_sts(path: Path, rows: list[list[str]], gold: str | Path | None) -> Pairs:
    gold_scores = None
    if gold is not None:
        gold_rows = [r for r in _rows(Path(gold))]
        gold_scores = [_score(r[0], Path(gold), i) for i, r in enumerate(gold_rows, start=1)]
        if len(gold_scores) != len(rows):
            raise InputError(
                gold,
                f"{len(gold_scores)} gold scores for {len(rows)} pairs in {path}",
                "use the gold file that belongs to this test file",
            )
    s1: list[str] = []
    s2: list[str] = []
    scores: list[float] = []
    for line, r in enumerate(rows, start=1):
        want = 2 if gold_scores is not None else 3
        if len(r) < want:
            raise InputError(
                f"{path}:{line}",
                f"{len(r)} field(s), expected {want} (s1, s2{', score' if want == 3 else ''})",
                "fix the row, or give the gold file as `gold` for a test file without scores",
            )
        extra_fields(r, want, f"{path}:{line}", TAB_FIX)
        s1.append(r[0].strip())
        s2.append(r[1].strip())
        scores.append(gold_scores[line - 1] if gold_scores is not None else _score(r[2], path, line))
    source = gold if gold is not None else path  # the file the scores came from
    return s1, s2, scores, [f"{source}:{1 + i}" for i in range(len(scores))]


@dataclass(frozen=True)
class StsFormat:
    """One STS file layout, registered under its ``format`` name. ``own_splits``: the file carries
    its splits (a ``split`` column or a ``split_file``; ``split`` picks one) instead of a seeded
    hold-out (``validation_share``). ``read(name, path, gold, split, split_file, scale_max)`` gives
    the pairs asked for and the number of pairs per split of the whole file."""

    own_splits: bool
    read: Callable[[str, Path, str | Path | None, str | None, str | Path | None, float], tuple[StsSet, dict[str, int]]]
    #: ``(name, path, split, split_file)``: checks the header line alone while the config is read (None: no check)
    check_header: Callable[[str, Path, str | None, str | Path | None], None] | None = None


STS_FORMATS: Readers[StsFormat] = Readers("sts", "STS format", "eval_sets.<name>.format", read_in_full=True)


def _whole_file(pairs: Callable[[Path, list[list[str]], str | Path | None], Pairs]) -> StsFormat:
    def read(
        name: str,
        path: Path,
        gold: str | Path | None,
        split: str | None,
        split_file: str | Path | None,
        scale_max: float,
    ) -> tuple[StsSet, dict[str, int]]:
        rows = _rows(path)
        if not rows:
            raise InputError(path, "the evaluation file is empty", "point the eval set at a non-empty STS file")
        s1, s2, scores, where = pairs(path, rows, gold)
        if not scores:
            raise InputError(path, "has a header line and no rows", "point the eval set at a file with pairs")
        _check_scale(scores, where, scale_max, name)
        state_repeats(f"eval_sets.{name}", list(zip(s1, s2, scores, strict=True)), where)
        return StsSet(name, s1, s2, np.asarray(scores, dtype=np.float64), scale_max), {"pairs": len(scores)}

    return StsFormat(own_splits=False, read=read)


STS_FORMATS.register("sts_tsv")(_whole_file(_sts_tsv))
STS_FORMATS.register("n2c2_sts")(_whole_file(_n2c2_sts))
STS_FORMATS.register("table")(
    StsFormat(
        own_splits=True,
        read=lambda name, path, gold, split, split_file, scale_max: read_sts_table(
            name, path, split, split_file, scale_max
        ),
        check_header=check_table_header,
    )
)


def sts_format(name: str, fmt: str) -> StsFormat:
    return STS_FORMATS.get(fmt, where=f"config: eval_sets.{name}.format")
