"""Read STS evaluation sets.

Formats (config ``eval_sets.<name>.format``):
- ``sts_tsv``: tab-separated with a header naming ``sentence1``, ``sentence2`` and ``score``;
- ``n2c2_sts``: the n2c2 2019 ClinicalSTS layout, no header, ``s1<TAB>s2<TAB>score``; for the
  test file (``s1<TAB>s2``) give the gold file (one score per line) as ``gold``.
Files are read without quote handling (``csv.QUOTE_NONE``): clinical sentences contain quotes.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from clinsent.errors import InputError

FORMATS = ("sts_tsv", "n2c2_sts")


@dataclass(frozen=True)
class StsSet:
    name: str
    sentences1: list[str]
    sentences2: list[str]
    scores: np.ndarray
    scale_max: float = 5.0

    def __len__(self) -> int:
        return len(self.scores)

    def unique_sentences(self) -> list[str]:
        """Every distinct sentence of the set, in first-seen order."""
        return list(dict.fromkeys([*self.sentences1, *self.sentences2]))


def _rows(path: Path) -> list[list[str]]:
    try:
        with open(path, encoding="utf-8", newline="") as fh:
            return [r for r in csv.reader(fh, delimiter="\t", quoting=csv.QUOTE_NONE) if any(c.strip() for c in r)]
    except FileNotFoundError as exc:
        raise InputError(path, "the evaluation file does not exist", "fix `eval_sets.<name>.path` in the config") from exc
    except UnicodeDecodeError as exc:
        raise InputError(path, f"not UTF-8 ({exc})", "convert the file to UTF-8") from exc


def _score(value: str, path: Path, line: int) -> float:
    try:
        return float(value)
    except ValueError as exc:
        raise InputError(f"{path}:{line}", f"score {value!r} is not a number",
                         "fix the row, or check the `format` of this eval set") from exc


def read_sts(name: str, path: str | Path, fmt: str, gold: str | Path | None = None, scale_max: float = 5.0) -> StsSet:
    path = Path(path)
    rows = _rows(path)
    if not rows:
        raise InputError(path, "the evaluation file is empty", "point the eval set at a non-empty STS file")
    s1: list[str] = []
    s2: list[str] = []
    scores: list[float] = []
    if fmt == "sts_tsv":
        header = [h.strip() for h in rows[0]]
        missing = [c for c in ("sentence1", "sentence2", "score") if c not in header]
        if missing:
            raise InputError(f"{path}:1", f"header {header} lacks {missing}",
                             "add a header `sentence1<TAB>sentence2<TAB>score`, or use format n2c2_sts")
        i1, i2, i3 = (header.index(c) for c in ("sentence1", "sentence2", "score"))
        for line, r in enumerate(rows[1:], start=2):
            if len(r) <= max(i1, i2, i3):
                raise InputError(f"{path}:{line}", f"{len(r)} field(s), expected {len(header)}", "fix the row")
            s1.append(r[i1].strip())
            s2.append(r[i2].strip())
            scores.append(_score(r[i3], path, line))
    elif fmt == "n2c2_sts":
        gold_scores = None
        if gold is not None:
            gold_rows = [r for r in _rows(Path(gold))]
            gold_scores = [_score(r[0], Path(gold), i) for i, r in enumerate(gold_rows, start=1)]
            if len(gold_scores) != len(rows):
                raise InputError(gold, f"{len(gold_scores)} gold scores for {len(rows)} pairs in {path}",
                                 "use the gold file that belongs to this test file")
        for line, r in enumerate(rows, start=1):
            want = 2 if gold_scores is not None else 3
            if len(r) < want:
                raise InputError(f"{path}:{line}", f"{len(r)} field(s), expected {want} (s1, s2{', score' if want == 3 else ''})",
                                 "fix the row, or give the gold file as `gold` for a test file without scores")
            s1.append(r[0].strip())
            s2.append(r[1].strip())
            scores.append(gold_scores[line - 1] if gold_scores is not None else _score(r[2], path, line))
    else:
        raise InputError(f"config: eval_sets.{name}.format", f"unknown format {fmt!r}", f"use one of {', '.join(FORMATS)}")
    return StsSet(name, s1, s2, np.asarray(scores, dtype=np.float64), scale_max)

