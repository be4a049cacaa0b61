"""Cosine similarity of document embeddings within and between classes (the healthcare-LM
paper's Figure 5: box plots per model and class relation).

Means are exact over every unordered pair of the analysed documents (streamed,
:mod:`clinsent.evaluation.space`); the box plots' quartiles and whiskers come from every pair
when there are at most ``max_pairs``, else from a seeded uniform sample of that many.
Metrics: ``within_<stat>`` and ``between_<stat>`` for mean, whislo, q1, med, q3, whishi, and
the headline ``separation`` = within mean - between mean.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from clinsent.config.declare import SEED_MAX, knob
from clinsent.evaluation.space import PairSample, box_stats, sample_pairs, upper_blocks
from clinsent.tasks.base import TASKS
from clinsent.tasks.labelled_docs import LabelledDocsSettings, LabelledDocsTask

STATS = ("mean", "whislo", "q1", "med", "q3", "whishi")


@dataclass(frozen=True)
class ClassSimilaritySettings(LabelledDocsSettings):
    max_pairs: int = knob(2_000_000, "pairs behind the quartiles (all pairs when there are fewer)", minimum=1)
    seed: int = knob(0, "seed of the pair sample", minimum=0, maximum=SEED_MAX)


@TASKS.register("class_similarity", settings=ClassSimilaritySettings)
class ClassSimilarity(LabelledDocsTask[ClassSimilaritySettings]):
    headline = "separation"
    metrics = ("separation", *(f"{rel}_{s}" for rel in ("within", "between") for s in STATS))

    def score(
        self, texts: list[str], vectors: np.ndarray, context: Mapping[str, Any] | None = None
    ) -> dict[str, float]:
        x, codes = self.labelled_vectors(texts, vectors)
        sums = {"within": [0.0, 0], "between": [0.0, 0]}
        i, j = sample_pairs(len(x), self.settings.max_pairs, self.settings.seed)
        sample = PairSample(i, j)
        for start, sims, upper in upper_blocks(x):
            same = codes[start : start + len(sims), None] == codes[None, :]
            for rel, mask in (("within", same & upper), ("between", ~same & upper)):
                sums[rel][0] += float(sims[mask].sum())
                sums[rel][1] += int(mask.sum())
            sample.fill(start, sims)
        cos = sample.values
        same = codes[i] == codes[j]
        out: dict[str, float] = {}
        for rel, mask in (("within", same), ("between", ~same)):
            stats = box_stats(cos[mask])
            stats["mean"] = sums[rel][0] / sums[rel][1] if sums[rel][1] else float("nan")
            out.update({f"{rel}_{k}": v for k, v in stats.items()})
        out["separation"] = out["within_mean"] - out["between_mean"]
        return out
