"""Semantic textual similarity (MED-SE section 4.4; SimCSE's STS protocol): Spearman and
Pearson of the cosine of each pair's embeddings against the gold score; alignment over pairs
scored above ``positive_share`` of the scale and uniformity over every distinct sentence
(Wang and Isola 2020), on L2-normalised embeddings. Files: :mod:`clinsent.evaluation.sts_data`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from clinsent.evaluation.metrics import cosine_rows, spearman, sts_metrics
from clinsent.evaluation.sts_data import StsSet, read_sts, read_sts_table
from clinsent.errors import InputError
from clinsent.settings import knob
from clinsent.tasks.base import TASKS, Task


@dataclass(frozen=True)
class StsSettings:
    path: str = knob("", "the STS file", required=True)
    format: Literal["sts_tsv", "n2c2_sts", "table"] = knob(
        "n2c2_sts", "sts_tsv (header sentence1, sentence2, score), n2c2_sts (no header, s1<TAB>s2<TAB>score) or table "
                    "(TSV/CSV/parquet with sentence1, sentence2, score and optional id, split: BIOSSES)", required=True)
    gold: str | None = knob(None, "n2c2 test file without scores: the gold file, one score per line")
    split: str | None = knob(None, "format table: the split to use (BLURB: train, dev, test), from the split column "
                                   "or split_file")
    split_file: str | None = knob(None, "format table: a TSV/CSV with columns id, split (pair ids: the id column, "
                                        "else 1-based rows)")
    scale_max: float = knob(5.0, "top of the score scale", exclusiveMinimum=0)
    positive_share: float = knob(0.8, "alignment positives: gold above this share of scale_max",
                                 exclusiveMinimum=0, maximum=1)


@TASKS.register("sts")
class Sts(Task):
    name = "sts"
    settings_class = StsSettings
    headline = "spearman"
    metrics = ("spearman", "pearson", "alignment", "uniformity")
    curve_keys = ("path", "format", "gold", "split", "split_file", "scale_max")  # not the positive share
    settings: StsSettings

    def files(self) -> list[str]:
        s = self.settings
        return [s.path] + [f for f in (s.gold, s.split_file) if f]

    def read(self) -> StsSet:
        s = self.settings
        if s.format == "table":
            return read_sts_table(self.set_name, s.path, s.split, s.split_file, s.scale_max)[0]
        if s.split or s.split_file:
            raise InputError(f"config: eval_sets.{self.set_name}", f"split and split_file need format table, not {s.format}",
                             "use format table (a file with sentence1, sentence2, score, split), or drop them")
        return read_sts(self.set_name, s.path, s.format, s.gold, s.scale_max)

    def statistics(self) -> dict[str, Any]:
        s = self.settings
        counts = ({"pairs": len(self.data)} if s.format != "table"
                  else read_sts_table(self.set_name, s.path, None, s.split_file, s.scale_max)[1])
        return {"task": "sentence similarity", "unit": "pairs", "splits": counts, "used": s.split or "all",
                "metric": "Spearman"}

    def texts(self) -> list[str]:
        return self.data.unique_sentences()

    def _pairs(self, texts: list[str], vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return self.lookup(texts, vectors, self.data.sentences1), self.lookup(texts, vectors, self.data.sentences2)

    def score(self, texts: list[str], vectors: np.ndarray, context: Mapping[str, Any] | None = None) -> dict[str, float]:
        e1, e2 = self._pairs(texts, vectors)
        return sts_metrics(e1, e2, self.data.scores, vectors, self.data.scale_max, self.settings.positive_share)

    def curve_score(self, texts: list[str], vectors: np.ndarray) -> float:
        e1, e2 = self._pairs(texts, vectors)
        return spearman(cosine_rows(e1, e2), self.data.scores)
