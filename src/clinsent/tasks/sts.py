"""Semantic textual similarity (MED-SE section 4.4; SimCSE's STS protocol): Spearman and
Pearson (with its two-sided p-value: the clinical NLI study's BIOSSES table) of the cosine of
each pair's embeddings against the gold score; alignment over pairs scored above
``positive_share`` of the scale and uniformity over every distinct sentence (Wang and Isola
2020), on L2-normalised embeddings. Files: :mod:`clinsent.evaluation.sts_data`.

A file without a validation split (n2c2 2019 ClinicalSTS: 1,641 training pairs) is split by
``validation_share`` and ``validation_seed`` (BioSimCSE: 80/20): the pairs are permuted by
numpy's seeded PCG64 generator, the first round(share x n) are ``validation``, the rest
``train``; the fine-tune job records the pair numbers it used. Fine-tuning (BioSimCSE's
fine-tuned setting) regresses the cosine on gold / scale_max (sentence-transformers'
``CosineSimilarityLoss``); a cross-encoder's scores are ranked the same way."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from clinsent.config.declare import SEED_MAX, knob
from clinsent.errors import InputError
from clinsent.evaluation.bootstrap import Items, rowwise_pearson, rowwise_spearman
from clinsent.evaluation.metrics import cosine_rows, pearson, pearson_p, spearman, sts_metrics
from clinsent.evaluation.sts_data import STS_FORMATS, StsSet, sts_format
from clinsent.tasks.base import TASKS, PairTargets, Task

HOLDOUT_PARTS = ("train", "validation")


def holdout_mask(n: int, share: float, seed: int) -> np.ndarray:
    """True for the validation pairs: the first round(share x n) of a seeded permutation."""
    order = np.random.default_rng(seed).permutation(n)
    mask = np.zeros(n, dtype=bool)
    mask[order[: int(round(share * n))]] = True
    return mask


@dataclass(frozen=True)
class StsSettings:
    path: str = knob("", "the STS file", required=True)
    format: str = knob(
        "n2c2_sts",
        "a registered STS format (clinsent.evaluation.sts_data.STS_FORMATS): sts_tsv (header sentence1, "
        "sentence2, score), n2c2_sts (no header, s1<TAB>s2<TAB>score) or table (TSV/CSV/parquet with "
        "sentence1, sentence2, score and optional id, split: BIOSSES)",
        required=True,
        names=STS_FORMATS,
    )
    gold: str | None = knob(None, "n2c2 test file without scores: the gold file, one score per line")
    split: str | None = knob(
        None,
        "format table: the split to use (BLURB: train, dev, test), from the split column "
        "or split_file; other formats with validation_share: train or validation",
    )
    split_file: str | None = knob(
        None, "format table: a TSV/CSV with columns id, split (pair ids: the id column, else 1-based rows)"
    )
    validation_share: float = knob(
        0.0,
        "formats sts_tsv and n2c2_sts: hold out this share of the pairs as the "
        "validation split (BioSimCSE: 0.2 of ClinicalSTS' training pairs)",
        minimum=0,
        exclusiveMaximum=1,
    )
    validation_seed: int = knob(
        0, "seed of the validation split's permutation (recorded by the fine-tune job)", minimum=0, maximum=SEED_MAX
    )
    scale_max: float = knob(5.0, "top of the score scale", exclusiveMinimum=0)
    positive_share: float = knob(
        0.8, "alignment positives: gold above this share of scale_max", exclusiveMinimum=0, maximum=1
    )


@TASKS.register("sts", settings=StsSettings)
class Sts(Task[StsSettings]):
    pair_training = True
    headline = "spearman"
    metrics = ("spearman", "pearson", "pearson_p", "alignment", "uniformity")
    not_differenced = ("pearson_p",)  # a p-value: no paired difference
    curve_keys = (
        "path",
        "format",
        "gold",
        "split",
        "split_file",
        "validation_share",
        "validation_seed",
        "scale_max",
    )  # not the positive share
    settings: StsSettings

    def files(self) -> list[str]:
        s = self.settings
        return [s.path] + [f for f in (s.gold, s.split_file) if f]

    def __init__(self, set_name: str, settings: StsSettings) -> None:
        super().__init__(set_name, settings)
        s, where = settings, f"config: eval_sets.{set_name}"
        self.layout = sts_format(set_name, s.format)
        if self.layout.own_splits and s.validation_share:
            raise InputError(
                f"{where}.validation_share",
                f"format {s.format} has its own split column or split_file",
                "use split (train, dev, test), or drop validation_share",
            )
        if not self.layout.own_splits and s.split_file:
            own = " or ".join(n for n in STS_FORMATS.names() if STS_FORMATS.get(n).own_splits)
            raise InputError(
                f"{where}.split_file",
                f"split_file needs format {own}, not {s.format}",
                f"use format {own}, or validation_share for a seeded split",
            )
        if not self.layout.own_splits and (s.split is None) != (not s.validation_share):
            raise InputError(
                f"{where}.split",
                f"format {s.format}: split {s.split!r} with validation_share {s.validation_share:g}",
                "give both (split: train or validation) or neither",
            )
        if not self.layout.own_splits and s.split is not None and s.split not in HOLDOUT_PARTS:
            raise InputError(f"{where}.split", f"{s.split!r} is not train or validation", "use train or validation")

    def check_header(self) -> None:
        s = self.settings
        if self.layout.check_header is not None:
            self.layout.check_header(
                self.set_name, Path(s.path), s.split if self.layout.own_splits else None, s.split_file
            )

    def read(self) -> StsSet:
        s = self.settings
        if self.layout.own_splits:
            return self.layout.read(self.set_name, Path(s.path), s.gold, s.split, s.split_file, s.scale_max)[0]
        full = self.layout.read(self.set_name, Path(s.path), s.gold, None, None, s.scale_max)[0]
        if not s.validation_share:
            return full
        keep = np.flatnonzero(
            holdout_mask(len(full), s.validation_share, s.validation_seed) == (s.split == "validation")
        )
        if not len(keep):
            raise InputError(
                f"config: eval_sets.{self.set_name}.validation_share",
                f"the {s.split} split of {s.path} has no pairs ({len(full)} in all)",
                "choose a share that leaves pairs in both splits",
            )
        return StsSet(
            self.set_name,
            [full.sentences1[i] for i in keep],
            [full.sentences2[i] for i in keep],
            full.scores[keep],
            full.scale_max,
            [int(i) + 1 for i in keep],
        )

    def statistics(self) -> dict[str, Any]:
        s = self.settings
        if self.layout.own_splits:
            counts = self.layout.read(self.set_name, Path(s.path), s.gold, None, s.split_file, s.scale_max)[1]
        elif s.validation_share:
            n = len(self.layout.read(self.set_name, Path(s.path), s.gold, None, None, s.scale_max)[0])
            held = int(holdout_mask(n, s.validation_share, s.validation_seed).sum())
            counts = {"train": n - held, "validation": held}
        else:
            counts = {"pairs": len(self.data)}
        return {
            "task": "sentence similarity",
            "unit": "pairs",
            "splits": counts,
            "used": s.split or "all",
            "metric": "Spearman",
        }

    def texts(self) -> list[str]:
        return self.data.unique_sentences()

    def _pairs(self, texts: list[str], vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return self.lookup(texts, vectors, self.data.sentences1), self.lookup(texts, vectors, self.data.sentences2)

    def score(
        self, texts: list[str], vectors: np.ndarray, context: Mapping[str, Any] | None = None
    ) -> dict[str, float]:
        e1, e2 = self._pairs(texts, vectors)
        return sts_metrics(e1, e2, self.data.scores, vectors, self.data.scale_max, self.settings.positive_share)

    def curve_score(self, texts: list[str], vectors: np.ndarray) -> float:
        e1, e2 = self._pairs(texts, vectors)
        return spearman(cosine_rows(e1, e2), self.data.scores)

    def curve_score_and_items(self, texts: list[str], vectors: np.ndarray) -> tuple[float, Items]:
        return self.curve_score(texts, vectors), self.items(texts, vectors)

    def items(self, texts: list[str], vectors: np.ndarray) -> Items:
        """The pairs: Spearman and Pearson of the resampled pairs' cosines against their gold."""
        return self.pair_items([cosine_rows(*self._pairs(texts, vectors))])

    def pair_items(self, scores: list[np.ndarray]) -> Items:
        """The pairs, each with its predicted score (a cosine, or a cross-encoder's output)."""
        predicted, gold = np.asarray(scores[0], dtype=np.float64), np.asarray(self.data.scores, dtype=np.float64)
        return Items(
            len(gold),
            ("spearman", "pearson"),
            lambda i: np.stack([rowwise_spearman(predicted[i], gold[i]), rowwise_pearson(predicted[i], gold[i])]),
            "pairs",
        )

    def training_pairs(self) -> PairTargets:
        d = self.data
        return PairTargets(
            list(d.sentences1),
            list(d.sentences2),
            d.scores / d.scale_max,
            "similarity",
            list(d.pair_numbers or range(1, len(d) + 1)),
        )

    def pair_parts(self) -> list[tuple[list[str], list[str]]]:
        return [(list(self.data.sentences1), list(self.data.sentences2))]

    def score_pairs(self, scores: list[np.ndarray]) -> dict[str, float]:
        predicted, gold = np.asarray(scores[0], dtype=np.float64), self.data.scores
        r = pearson(predicted, gold)
        return {
            "spearman": spearman(predicted, gold),
            "pearson": r,
            "pearson_p": pearson_p(r, len(gold)),
            "n_pairs": float(len(gold)),
        }
