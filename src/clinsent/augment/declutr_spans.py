"""DeCLUTR's anchor and positive spans (Giorgi et al. 2021, section 3.2; ``JohnGiorgi/DeCLUTR``,
``declutr/common/contrastive_utils.py``), over whitespace tokens, as the reference does:

- a document of N tokens needs N >= 2 x A x max_span (A anchors); its anchor starts are the
  chunk starts 0, max_span, 2 max_span, ... (chunks that fit whole);
- each anchor's length is floor(Beta(4, 2) x (max_span - min_span) + min_span); it starts
  uniformly inside a chunk drawn among those left, and that chunk and its two neighbours leave
  the pool (when fewer chunks than anchors-to-go per anchor remain, the first or the last
  chunk is taken, the reference's guard);
- each of P positives per anchor has length floor(Beta(2, 4) x (max_span - min_span) +
  min_span) and starts uniformly in [max(0, a_start - len), min(a_end, N - len)]: adjacent,
  overlapping or subsumed. ``strategy: subsuming`` keeps it inside the anchor (length drawn up
  to the anchor's); ``adjacent`` puts it right before or after the anchor (length capped by the
  room there).

Draws come from a numpy ``Generator`` (the step's), so a resumed job samples the same spans.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

Strategy = Literal["any", "subsuming", "adjacent"]


@dataclass(frozen=True)
class Span:
    start: int
    end: int  # exclusive, in whitespace tokens


def min_tokens(num_anchors: int, max_span: int) -> int:
    """The shortest document the sampler accepts (the paper's Table 12 threshold)."""
    return 2 * num_anchors * max_span


def sample_spans(
    n_tokens: int,
    num_anchors: int,
    num_positives: int,
    min_span: int,
    max_span: int,
    rng: np.random.Generator,
    strategy: Strategy = "any",
) -> tuple[list[Span], list[list[Span]]]:
    """(anchors, positives per anchor) of a document of ``n_tokens`` whitespace tokens."""
    if min_span > max_span:
        raise ValueError(f"min_span {min_span} exceeds max_span {max_span}")
    if n_tokens < min_tokens(num_anchors, max_span):
        raise ValueError(
            f"a document of {n_tokens} tokens is shorter than {min_tokens(num_anchors, max_span)} "
            f"(2 x {num_anchors} anchors x max_span {max_span})"
        )
    starts = list(range(0, n_tokens - max_span + 1, max_span))
    anchors: list[Span] = []
    positives: list[list[Span]] = []
    for i in range(num_anchors):
        length = int(rng.beta(4, 2) * (max_span - min_span) + min_span)
        left = num_anchors - i
        k = int(rng.choice([0, len(starts) - 1])) if len(starts) // left < left else int(rng.integers(len(starts)))
        a_start = int(rng.integers(starts[k], starts[k] + max_span - length + 1))
        del starts[max(0, k - 1) : k + 2]
        a_end = a_start + length
        anchors.append(Span(a_start, a_end))
        positives.append(
            [_positive(n_tokens, a_start, a_end, min_span, max_span, rng, strategy) for _ in range(num_positives)]
        )
    return anchors, positives


def _positive(
    n_tokens: int, a_start: int, a_end: int, min_span: int, max_span: int, rng: np.random.Generator, strategy: Strategy
) -> Span:
    if strategy == "subsuming":
        length = int(rng.beta(2, 4) * (a_end - a_start - min_span) + min_span)
        start = int(rng.integers(a_start, a_end - length + 1))
    elif strategy == "adjacent":
        cap = min(max_span, max(a_start, n_tokens - a_end))
        length = int(rng.beta(2, 4) * (cap - min_span) + min_span)
        options = ([a_start - length] if a_start - length > 0 else []) + (
            [a_end] if a_end + length <= n_tokens else []
        )
        start = int(rng.choice(options))
    else:
        length = int(rng.beta(2, 4) * (max_span - min_span) + min_span)
        start = int(rng.integers(max(0, a_start - length), min(a_end, n_tokens - length) + 1))
    return Span(start, start + length)
