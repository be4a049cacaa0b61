"""Metrics: Spearman and Pearson of cosine similarity against gold scores, alignment and
uniformity (Wang and Isola 2020) on L2-normalised embeddings.

Spearman is Pearson on average ranks (ties share their mean rank), so it equals
``scipy.stats.spearmanr``; MED-SE's eq. 4 is the tie-free special case.
"""

from __future__ import annotations

import numpy as np


def rankdata(x: np.ndarray) -> np.ndarray:
    """Average ranks starting at 1 (ties get the mean of their ranks)."""
    x = np.asarray(x, dtype=np.float64)
    order = np.argsort(x, kind="mergesort")
    sorted_x = x[order]
    ranks = np.empty(len(x), dtype=np.float64)
    boundaries = np.flatnonzero(np.diff(sorted_x)) + 1
    starts = np.concatenate([[0], boundaries])
    ends = np.concatenate([boundaries, [len(x)]])
    for s, e in zip(starts, ends, strict=True):
        ranks[order[s:e]] = (s + e + 1) / 2.0
    return ranks


def pearson(x: np.ndarray, y: np.ndarray) -> float:
    x = np.asarray(x, dtype=np.float64) - np.mean(x)
    y = np.asarray(y, dtype=np.float64) - np.mean(y)
    denom = np.sqrt((x * x).sum() * (y * y).sum())
    return float((x * y).sum() / denom) if denom > 0 else float("nan")


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    return pearson(rankdata(x), rankdata(y))


def pearson_p(r: float, n: int) -> float:
    """Two-sided p-value of a Pearson correlation ``r`` over ``n`` pairs under the null of no
    correlation (Student's t with n - 2 degrees of freedom, as ``scipy.stats.pearsonr``)."""
    from scipy.stats import t as student_t

    if n < 3 or not np.isfinite(r):
        return float("nan")
    if abs(r) >= 1.0:
        return 0.0
    stat = abs(r) * np.sqrt((n - 2) / (1.0 - r * r))
    return float(2.0 * student_t.sf(stat, n - 2))


def l2_normalise(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    return x / np.clip(np.linalg.norm(x, axis=1, keepdims=True), 1e-12, None)


def cosine_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (l2_normalise(a) * l2_normalise(b)).sum(axis=1)


def alignment(a: np.ndarray, b: np.ndarray, alpha: float = 2.0) -> float:
    """E ||f(x) - f(y)||^alpha over positive pairs (rows of a and b), on normalised embeddings."""
    if len(a) == 0:
        return float("nan")
    d = np.linalg.norm(l2_normalise(a) - l2_normalise(b), axis=1)
    return float(np.mean(d**alpha))


def uniformity(x: np.ndarray, t: float = 2.0) -> float:
    """log E_{i<j} exp(-t ||f(x_i) - f(x_j)||^2) on normalised embeddings."""
    z = l2_normalise(x)
    n = len(z)
    if n < 2:
        return float("nan")
    sq = np.clip(2.0 - 2.0 * (z @ z.T), 0.0, None)
    iu = np.triu_indices(n, k=1)
    vals = -t * sq[iu]
    m = vals.max()
    return float(m + np.log(np.mean(np.exp(vals - m))))


def sts_metrics(
    emb1: np.ndarray,
    emb2: np.ndarray,
    gold: np.ndarray,
    all_sentences: np.ndarray,
    scale_max: float,
    positive_share: float = 0.8,
) -> dict[str, float]:
    """Spearman/Pearson of cosine vs gold; alignment over pairs with gold > share * scale max;
    uniformity over every distinct sentence of the set."""
    cos = cosine_rows(emb1, emb2)
    pos = gold > positive_share * scale_max
    r = pearson(cos, gold)
    return {
        "spearman": spearman(cos, gold),
        "pearson": r,
        "pearson_p": pearson_p(r, len(gold)),
        "alignment": alignment(emb1[pos], emb2[pos]),
        "uniformity": uniformity(all_sentences),
        "n_pairs": float(len(gold)),
        "n_positive_pairs": float(pos.sum()),
    }
