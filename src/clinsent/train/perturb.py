"""Perturbation controls of MED-SE's entity-level objective (Hwang et al. 2022, Table 5).

- ``random_tokens``: the entity's span is replaced by as many randomly chosen token positions
  of the same sentence (never [CLS], [SEP] or padding);
- ``shuffle_pairs``: entity and definition embeddings are paired by a random derangement, so
  no entity meets its own definition;
- ``sentence_pooling``: the whole sentence (every real token) is pooled instead of the span.
"""

from __future__ import annotations

import torch

PERTURBATIONS = ("none", "random_tokens", "shuffle_pairs", "sentence_pooling")


def random_token_mask(span_mask: torch.Tensor, attention_mask: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """Bool [n, T] with, per row, as many random positions among tokens 1..L-2 as the span has."""
    out = torch.zeros_like(span_mask, dtype=torch.bool)
    for i in range(span_mask.size(0)):
        length = int(attention_mask[i].sum())
        inner = torch.arange(1, max(length - 1, 1))
        k = min(int(span_mask[i].sum()), len(inner))
        if k == 0:
            continue
        out[i, inner[torch.randperm(len(inner), generator=generator)[:k]]] = True
    return out


def derangement(n: int, generator: torch.Generator) -> torch.Tensor:
    """A random permutation of 0..n-1 with no fixed point (identity for n < 2)."""
    if n < 2:
        return torch.arange(n)
    order = torch.randperm(n, generator=generator)
    target = torch.empty(n, dtype=torch.long)
    target[order] = torch.roll(order, -1)
    return target
