"""Embedding-space statistics over all document pairs without an n x n matrix in memory.

Cosine similarities are computed one block of rows at a time (``block_rows(n)`` rows x n
columns, at most :data:`BLOCK_CELLS` float64 cells: 32 MB, whatever n; a statistic holds a few
such arrays at once), sampled pairs' cosines are read from those blocks as they pass, and
every statistic is a running sum, a union-find merge or a fixed-size sample of pairs. Memory is
therefore O(BLOCK_CELLS + n x d + max_pairs) and does not grow with n^2: for 50,000 documents
of 768 dimensions, the vectors' float32 lookup and float64 copies (about 440 MB), a few 32 MB
blocks and a 2-million-pair sample (48 MB: two int64 indices and a cosine each); measured: 588
MB at 50,000 documents, where the dense matrix alone would take 9.3 GiB
(bench/results/documents.md). Time is O(n^2 d): one pass of matrix products per task (the
graph's thresholds share one pass; its percentile sample takes one more).

Pairs are unordered (i < j), each counted once.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

BLOCK_CELLS = 1 << 22


def block_rows(n: int) -> int:
    return max(1, BLOCK_CELLS // max(n, 1))


def upper_blocks(x: np.ndarray) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
    """(first row, block of x[rows] @ x.T, mask of the pairs i < j) for consecutive row blocks."""
    n = len(x)
    step = block_rows(n)
    cols = np.arange(n)
    for start in range(0, n, step):
        rows = np.arange(start, min(start + step, n))
        yield start, x[rows] @ x.T, cols[None, :] > rows[:, None]


def pair_count(n: int) -> int:
    return n * (n - 1) // 2


def sample_pairs(n: int, max_pairs: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Every pair i < j when there are at most ``max_pairs``; else ``max_pairs`` pairs drawn
    uniformly with replacement (seeded)."""
    if pair_count(n) <= max_pairs:
        i, j = np.triu_indices(n, k=1)
        return i, j
    rng = np.random.default_rng(seed)
    i = rng.integers(0, n, size=max_pairs)
    j = rng.integers(0, n - 1, size=max_pairs)
    j = j + (j >= i)  # uniform over j != i
    return np.minimum(i, j), np.maximum(i, j)


class PairSample:
    """The cosines of sampled pairs (i < j), read from the similarity blocks as they pass: no
    gather of the vectors (a random gather of millions of rows costs more than the blocks)."""

    def __init__(self, i: np.ndarray, j: np.ndarray) -> None:
        self.i, self.j = i, j
        self.order = np.argsort(i, kind="stable")
        self.sorted_i = i[self.order]
        self.values = np.full(len(i), np.nan)

    def fill(self, start: int, sims: np.ndarray) -> None:
        lo, hi = np.searchsorted(self.sorted_i, [start, start + len(sims)])
        idx = self.order[lo:hi]
        self.values[idx] = sims[self.i[idx] - start, self.j[idx]]


def pair_cosines(x: np.ndarray, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """Cosines of the pairs (x is L2-normalised), in one pass over the blocks."""
    sample = PairSample(i, j)
    for start, sims, _ in upper_blocks(x):
        sample.fill(start, sims)
    return sample.values


def box_stats(values: np.ndarray) -> dict[str, float]:
    """A box plot's figures (matplotlib's convention: whiskers at the furthest values within
    1.5 IQR of the quartiles) and the mean."""
    if len(values) == 0:
        return {k: float("nan") for k in ("mean", "whislo", "q1", "med", "q3", "whishi")}
    q1, med, q3 = np.percentile(values, [25, 50, 75])
    iqr = q3 - q1
    inside = values[(values >= q1 - 1.5 * iqr) & (values <= q3 + 1.5 * iqr)]
    return {
        "mean": float(values.mean()),
        "whislo": float(inside.min()),
        "q1": float(q1),
        "med": float(med),
        "q3": float(q3),
        "whishi": float(inside.max()),
    }


def graph_components(x: np.ndarray, thresholds: list[float]) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per threshold, (component label per node, degree per node) of the graph with an edge
    between documents whose cosine exceeds it. One pass over the blocks serves every threshold;
    each block's edges are merged into the current labels (scipy's connected components) and
    dropped, never all held at once."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    n = len(x)
    labels = [np.arange(n) for _ in thresholds]
    degrees = [np.zeros(n, dtype=np.int64) for _ in thresholds]
    for start, sims, upper in upper_blocks(x):
        for k, t in enumerate(thresholds):
            r, c = np.nonzero((sims > t) & upper)
            r = r + start
            degrees[k] += np.bincount(r, minlength=n) + np.bincount(c, minlength=n)
            a, b = labels[k][r], labels[k][c]
            keep = a != b
            if keep.any():
                graph = coo_matrix((np.ones(int(keep.sum()), dtype=np.int8), (a[keep], b[keep])), shape=(n, n))
                _, comp = connected_components(graph, directed=False)
                labels[k] = comp[labels[k]]
    return [(np.unique(lab, return_inverse=True)[1], deg) for lab, deg in zip(labels, degrees)]
