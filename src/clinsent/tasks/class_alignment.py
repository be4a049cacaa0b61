"""Alignment and uniformity of document embeddings with same-class documents as positives
(Wang and Isola 2020; the healthcare-LM paper's eqs. 6-7 and Figure 6), on L2-normalised
embeddings, as ``ssnl/align_uniform`` computes them:

- alignment = mean over same-class pairs of ||f(x) - f(y)||^alpha (alpha 2);
- uniformity = log mean over all pairs i < j of exp(-t ||f(x) - f(y)||^2) (t 2).

Both exact over every unordered pair, streamed block by block (:mod:`clinsent.evaluation.space`).
Lower is better for both; the headline is ``alignment``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from clinsent.config.declare import knob
from clinsent.evaluation.space import upper_blocks
from clinsent.tasks.base import TASKS
from clinsent.tasks.labelled_docs import LabelledDocsSettings, LabelledDocsTask


@dataclass(frozen=True)
class ClassAlignmentSettings(LabelledDocsSettings):
    alpha: float = knob(2.0, "exponent of the alignment distance", exclusiveMinimum=0)
    t: float = knob(2.0, "temperature of uniformity", exclusiveMinimum=0)


@TASKS.register("class_alignment", settings=ClassAlignmentSettings)
class ClassAlignment(LabelledDocsTask[ClassAlignmentSettings]):
    headline = "alignment"
    metrics = ("alignment", "uniformity")

    def score(
        self, texts: list[str], vectors: np.ndarray, context: Mapping[str, Any] | None = None
    ) -> dict[str, float]:
        s = self.settings
        x, codes = self.labelled_vectors(texts, vectors)
        align_sum, align_n, uni_sum, uni_n = 0.0, 0, 0.0, 0
        for start, sims, upper in upper_blocks(x):
            sq = np.clip(2.0 - 2.0 * sims, 0.0, None)  # ||a - b||^2 of unit vectors
            same = (codes[start : start + len(sims), None] == codes[None, :]) & upper
            align_sum += float((sq[same] ** (s.alpha / 2)).sum())
            align_n += int(same.sum())
            uni_sum += float(np.exp(-s.t * sq[upper]).sum())
            uni_n += int(upper.sum())
        return {
            "alignment": align_sum / align_n if align_n else float("nan"),
            "uniformity": float(np.log(uni_sum / uni_n)) if uni_n else float("nan"),
        }
