"""Whitening (Su et al. 2021 BERT-whitening; Huang et al. 2021 WhiteningBERT; MED-SE Table 3).

mu = mean of the vectors, Sigma = their covariance, U S U^T = SVD(Sigma),
W = U diag(1 / sqrt(S)); y = (x - mu) W[:, :k]. Fitted, as WhiteningBERT does, on the
evaluation set's own sentences (both sides). Cosine scoring L2-normalises afterwards.

With fewer sentences than dimensions the covariance is singular: directions whose singular
value is below ``rank_tol`` x the largest are dropped (they carry no variance in the fitting
sentences and would otherwise be scaled by ~1/sqrt(0)); the log names how many were kept.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Whitening:
    mu: np.ndarray
    w: np.ndarray

    def transform(self, x: np.ndarray) -> np.ndarray:
        return (np.asarray(x, dtype=np.float64) - self.mu) @ self.w


def fit_whitening(x: np.ndarray, k: int | None = None, rank_tol: float = 1e-10) -> Whitening:
    """``k``: keep at most the first k whitened dimensions (None: every non-null one)."""
    x = np.asarray(x, dtype=np.float64)
    if len(x) < 2:
        raise ValueError(f"whitening needs at least 2 vectors, got {len(x)}")
    mu = x.mean(axis=0, keepdims=True)
    cov = np.cov(x - mu, rowvar=False)
    u, s, _ = np.linalg.svd(cov)
    keep = int((s > rank_tol * s[0]).sum()) if s[0] > 0 else 0
    if k:
        keep = min(keep, k)
    if keep == 0:
        raise ValueError("whitening: the vectors have no variance (all identical)")
    return Whitening(mu, u[:, :keep] / np.sqrt(s[:keep]))
