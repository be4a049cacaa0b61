"""Score exported embeddings against an STS set."""

from __future__ import annotations

import numpy as np

from clinsent.errors import InputError
from clinsent.evaluation.metrics import sts_metrics
from clinsent.evaluation.sts_data import StsSet


def pair_vectors(sts: StsSet, texts: list[str], vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The embeddings of each pair's two sentences, looked up by text in (texts, vectors)."""
    index = {t: i for i, t in enumerate(texts)}
    missing = [s for s in (*sts.sentences1, *sts.sentences2) if s not in index]
    if missing:
        raise InputError(f"embeddings of {sts.name}", f"{len(missing)} sentence(s) have no embedding, e.g. {missing[0]!r}",
                         "re-run the embed rule for this eval set")
    return vectors[[index[s] for s in sts.sentences1]], vectors[[index[s] for s in sts.sentences2]]


def evaluate_embeddings(sts: StsSet, texts: list[str], vectors: np.ndarray, positive_share: float = 0.8) -> dict[str, float]:
    e1, e2 = pair_vectors(sts, texts, vectors)
    return sts_metrics(e1, e2, sts.scores, vectors, sts.scale_max, positive_share)
