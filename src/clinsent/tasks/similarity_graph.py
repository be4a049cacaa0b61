"""Graph analysis of an embedding space (the healthcare-LM paper's Table 4): an edge joins two
documents whose cosine exceeds the p-th percentile of all pairwise cosines; for each p: the
threshold, the connected components, and the mean degree of the ``top_k`` largest ones.

The paper's figures (one component of mean degree 317.9, then four of 54.4) fit a graph built
from its edge list, so ``components: edges`` (the default) counts the components of that graph:
a document with no edge is no component and is counted apart (``isolated@p``). ``components:
nodes`` makes every document a node, each isolated one its own component (the earlier count).
``degree@p`` is the mean over the ``top_k`` largest components of each one's mean degree (the
paper's reading); ``node_degree@p`` the mean degree of their nodes, weighted by size (the
earlier figure).

Percentiles are exact when there are at most ``max_pairs`` pairs, else from a seeded uniform
sample of that many; components and degrees are exact, merged block by block without holding
the edges (:func:`clinsent.evaluation.space.graph_components`). Metrics ``threshold@p``,
``components@p``, ``isolated@p``, ``degree@p``, ``node_degree@p``; the headline is
``components@`` of the first percentile.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from clinsent.config.declare import knob
from clinsent.errors import InputError
from clinsent.evaluation.space import graph_components, pair_cosines, sample_pairs
from clinsent.tasks.base import TASKS
from clinsent.tasks.labelled_docs import LabelledDocsSettings, LabelledDocsTask


@dataclass(frozen=True)
class SimilarityGraphSettings(LabelledDocsSettings):
    percentiles: tuple[float, ...] = knob(
        (90.0, 95.0, 98.0, 99.0), "percentiles of the pairwise cosines used as edge thresholds (the paper's)"
    )
    top_k: int = knob(3, "the largest components whose mean degree is reported (the paper: 3)", minimum=1)
    max_pairs: int = knob(2_000_000, "pairs behind the percentiles (all pairs when there are fewer)", minimum=1)
    seed: int = knob(0, "seed of the pair sample", minimum=0)
    components: Literal["edges", "nodes"] = knob(
        "edges",
        "edges: the components of the graph built from the edge list, documents without an edge counted "
        "apart (the paper's Table 4); nodes: every document a node, an isolated one its own component",
    )


def graph_figures(labels: np.ndarray, degree: np.ndarray, k: int, components: str) -> dict[str, float]:
    """Components, isolated documents and the two mean degrees of the ``k`` largest components
    (ties: lower label first) from each node's component label and degree."""
    counted = np.ones(len(labels), dtype=bool) if components == "nodes" else degree > 0
    sizes = np.bincount(labels[counted], minlength=int(labels.max()) + 1 if len(labels) else 0)
    present = np.flatnonzero(sizes)
    top = present[np.argsort(-sizes[present], kind="stable")][:k]
    per_component = [float(degree[labels == c].mean()) for c in top]
    in_top = np.isin(labels, top) & counted
    return {
        "components": float(len(present)),
        "isolated": float((degree == 0).sum()),
        "degree": float(np.mean(per_component)) if per_component else float("nan"),
        "node_degree": float(degree[in_top].mean()) if in_top.any() else float("nan"),
    }


@TASKS.register("similarity_graph", settings=SimilarityGraphSettings)
class SimilarityGraph(LabelledDocsTask[SimilarityGraphSettings]):
    def __init__(self, set_name: str, settings: SimilarityGraphSettings) -> None:
        super().__init__(set_name, settings)
        if not settings.percentiles or not all(0 < p < 100 for p in settings.percentiles):
            raise InputError(
                f"config: eval_sets.{set_name}.percentiles",
                f"{list(settings.percentiles)}",
                "give one or more percentiles between 0 and 100",
            )
        self.headline = f"components@{settings.percentiles[0]:g}"
        self.metrics = tuple(
            f"{m}@{p:g}"
            for p in settings.percentiles
            for m in ("threshold", "components", "isolated", "degree", "node_degree")
        )

    def score(
        self, texts: list[str], vectors: np.ndarray, context: Mapping[str, Any] | None = None
    ) -> dict[str, float]:
        s = self.settings
        x, _ = self.labelled_vectors(texts, vectors)
        i, j = sample_pairs(len(x), s.max_pairs, s.seed)
        cos = pair_cosines(x, i, j)
        out: dict[str, float] = {}
        thresholds = [float(np.percentile(cos, p)) for p in s.percentiles]
        for p, threshold, (labels, degree) in zip(s.percentiles, thresholds, graph_components(x, thresholds)):
            out[f"threshold@{p:g}"] = threshold
            out.update({f"{m}@{p:g}": v for m, v in graph_figures(labels, degree, s.top_k, s.components).items()})
        return out
