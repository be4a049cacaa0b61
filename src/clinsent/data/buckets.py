"""Length buckets: the few token lengths a job's batches are padded to, so its steps take few shapes.

A batch padded to its own longest row takes one of up to ``max_length`` widths, and a step of
each new width is a new shape: a GPU library plans its kernels again, a captured step
(:mod:`clinsent.train.graphs`) is captured again. Padded to the smallest of a few declared
lengths (the **buckets**) that holds its longest row, a job's steps take at most that many
shapes, for some padding the mask hides (the embeddings are the same within 1e-5 in eval mode;
in training, dropout's masks are drawn over the padded shape, so a curve differs by dropout's
noise, not in distribution).

``length_buckets`` (every trained method's knob) is either a list of lengths, or a count: the
lengths are then chosen from the job's own batches, which the batch plan and the token tables
fix in advance (:func:`choose`): the set of at most that many lengths, the largest covering the
longest batch, that pads the fewest tokens over the run's steps (an exact dynamic programme over
the batches' widths; each bucket is then one of them). 0 pads each batch to its own longest row,
as before. Lengths are not rounded to multiples of 8: the matrix products' long dimension is
rows x length, a multiple of 8 whenever the batch is, and on the demo corpus rounding the length
padded 12% more tokens than the buckets themselves (``bench/results/proxies``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


def aligned(width: int, cap: int) -> int:
    """A batch's width as a bucket holds it: at least 1, at most ``cap``."""
    return min(cap, max(int(width), 1))


def choose(widths: Sequence[int], rows: Sequence[int], count: int, cap: int) -> tuple[int, ...]:
    """At most ``count`` bucket lengths for batches of ``widths`` tokens and ``rows`` rows (one
    pair per step) under the length ``cap``: the largest covering the widest batch, the padded
    tokens (sum over steps of rows x (bucket - width)) as few as any such set gives."""
    if count < 1 or not len(widths):
        return (aligned(max(widths, default=cap), cap),) if len(widths) else (cap,)
    need = np.array([aligned(w, cap) for w in widths])
    weight = np.asarray(rows, dtype=np.float64)
    values = np.unique(need)  # a bucket worth having is one of these (each batch's own width)
    # tokens[j] = rows of the batches whose width is values[j]; cost of serving values[a..b] with
    # bucket values[b]: sum over j in a..b of tokens[j] x (values[b] - values[j])
    tokens = np.array([weight[need == v].sum() for v in values])
    mass = np.concatenate([[0.0], np.cumsum(tokens)])
    moment = np.concatenate([[0.0], np.cumsum(tokens * values)])

    def cost(a: int, b: int) -> float:  # values[a..b] padded to values[b]
        return float(values[b] * (mass[b + 1] - mass[a]) - (moment[b + 1] - moment[a]))

    u = len(values)
    k = min(count, u)
    best = np.full((k + 1, u), np.inf)
    back = np.zeros((k + 1, u), dtype=np.int64)
    for b in range(u):
        best[1, b] = cost(0, b)
    for m in range(2, k + 1):
        for b in range(m - 1, u):
            options = [best[m - 1, a - 1] + cost(a, b) for a in range(m - 1, b + 1)]
            j = int(np.argmin(options))
            best[m, b], back[m, b] = options[j], j + m - 1
    m = int(np.argmin(best[1:, u - 1])) + 1  # fewer buckets when more would pad no fewer tokens
    chosen, b = [], u - 1
    while m >= 1:
        chosen.append(int(values[b]))
        a = back[m, b] if m > 1 else 0
        b, m = a - 1, m - 1
    return tuple(sorted(chosen))


@dataclass(frozen=True)
class Group:
    """A group of token columns a loss pads to one width: its length ``cap``; ``single``: one
    width for the whole run (the longest), a small dimension not worth several shapes (MED-SE's
    entity spans)."""

    cap: int
    single: bool = False


@dataclass(frozen=True)
class Buckets:
    """The lengths a job pads its batches to (empty: each batch to its own longest row)."""

    lengths: tuple[int, ...]
    cap: int

    def width(self, longest: int) -> int:
        """The padded width of a batch whose longest row has ``longest`` tokens: the smallest
        bucket that holds it (a batch longer than every bucket, which a text changed at each
        step can give: the length cap)."""
        if not self.lengths:
            return max(int(longest), 1)
        for length in self.lengths:
            if longest <= length:
                return length
        return self.cap

    def describe(self) -> str:
        return (
            f"length buckets {list(self.lengths)} (of at most {self.cap} tokens)"
            if self.lengths
            else "no length buckets: each batch padded to its longest row"
        )


def resolve(spec: int | Sequence[int], group: Group, widths: Sequence[int], rows: Sequence[int]) -> Buckets:
    """The buckets of a ``length_buckets`` value (a count, or the lengths) for one width group of a
    job whose batches have ``widths`` tokens and ``rows`` rows (each step's, known in advance); a
    ``single`` group gets one, the longest, whenever there are buckets."""
    cap = group.cap
    if isinstance(spec, int):
        if spec <= 0:
            return Buckets((), cap)
        return Buckets(choose(widths, rows, 1 if group.single else spec, cap), cap)
    if group.single:
        return Buckets((aligned(max(widths, default=1), cap),), cap)
    return Buckets(tuple(sorted({min(int(x), cap) for x in spec})), cap)
