"""Graph analysis of an embedding space (the healthcare-LM paper's Table 4): documents are
nodes, an edge joins two documents whose cosine exceeds the p-th percentile of all pairwise
cosines; for each p: the threshold, the number of connected components, and the mean degree
of the nodes of the ``top_k`` largest components.

Percentiles are exact when there are at most ``max_pairs`` pairs, else from a seeded uniform
sample of that many; components and degrees are exact, merged block by block without holding
the edges (:func:`clinsent.evaluation.space.graph_components`). Metrics ``threshold@p``,
``components@p``, ``degree@p``; the headline is ``components@`` of the first percentile.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from clinsent.errors import InputError
from clinsent.evaluation.space import graph_components, pair_cosines, sample_pairs
from clinsent.settings import knob
from clinsent.tasks.base import TASKS
from clinsent.tasks.labelled_docs import LabelledDocsSettings, LabelledDocsTask


@dataclass(frozen=True)
class SimilarityGraphSettings(LabelledDocsSettings):
    percentiles: tuple[float, ...] = knob((90.0, 95.0, 98.0, 99.0), "percentiles of the pairwise cosines used as "
                                                                     "edge thresholds (the paper's)")
    top_k: int = knob(3, "the largest components whose mean degree is reported (the paper: 3)", minimum=1)
    max_pairs: int = knob(2_000_000, "pairs behind the percentiles (all pairs when there are fewer)", minimum=1)
    seed: int = knob(0, "seed of the pair sample", minimum=0)


def top_component_degree(labels: np.ndarray, degree: np.ndarray, k: int) -> float:
    """Mean degree of the nodes in the ``k`` largest components (ties: lower label first)."""
    sizes = np.bincount(labels)
    top = np.argsort(-sizes, kind="stable")[:k]
    return float(degree[np.isin(labels, top)].mean())


@TASKS.register("similarity_graph")
class SimilarityGraph(LabelledDocsTask):
    name = "similarity_graph"
    settings_class = SimilarityGraphSettings

    def __init__(self, set_name: str, settings: SimilarityGraphSettings) -> None:
        super().__init__(set_name, settings)
        if not settings.percentiles or not all(0 < p < 100 for p in settings.percentiles):
            raise InputError(f"config: eval_sets.{set_name}.percentiles", f"{list(settings.percentiles)}",
                             "give one or more percentiles between 0 and 100")
        self.headline = f"components@{settings.percentiles[0]:g}"
        self.metrics = tuple(f"{m}@{p:g}" for p in settings.percentiles for m in ("threshold", "components", "degree"))

    def score(self, texts: list[str], vectors: np.ndarray, context: Mapping[str, Any] | None = None) -> dict[str, float]:
        s = self.settings
        x, _ = self.labelled_vectors(texts, vectors)
        i, j = sample_pairs(len(x), s.max_pairs, s.seed)
        cos = pair_cosines(x, i, j)
        out: dict[str, float] = {}
        thresholds = [float(np.percentile(cos, p)) for p in s.percentiles]
        for p, threshold, (labels, degree) in zip(s.percentiles, thresholds, graph_components(x, thresholds)):
            out[f"threshold@{p:g}"] = threshold
            out[f"components@{p:g}"] = float(labels.max() + 1)
            out[f"degree@{p:g}"] = top_component_degree(labels, degree, s.top_k)
        return out
