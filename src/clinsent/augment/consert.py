"""ConSERT's token-level augmentations (Yan et al. 2021, ACL, section 3.2; MED-SE Table 3),
used here as the two views of SimCSE's loss instead of dropout noise.

- **token shuffle**: for each sentence the position ids of its L real tokens (including
  [CLS] and [SEP]) are permuted; token ids stay where they are and padding keeps its
  positions;
- **token cutoff**: after the embedding layer (word + position + type embeddings, LayerNorm,
  dropout), int(L * rate) randomly chosen rows among the L real tokens (specials included)
  are set to zero. The attention mask is left unchanged, as in ConSERT's code.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch


def _keys(attention_mask: torch.Tensor, generator: torch.Generator, cap: int | None) -> torch.Tensor:
    """Uniform keys [n, T] for each row's real tokens, drawn over ``cap`` columns (the length cap,
    so a row's draws do not depend on how far its batch is padded) and cut to the batch's width;
    above every real token's key (> 1) on padding, in position order."""
    n, width = attention_mask.shape
    keys = torch.rand((n, max(cap or width, width)), generator=generator)[:, :width]
    return torch.where(attention_mask.bool(), keys, 2.0 + torch.arange(width, dtype=keys.dtype))


def shuffled_position_ids(
    attention_mask: torch.Tensor, generator: torch.Generator, cap: int | None = None
) -> torch.Tensor:
    """Position ids [n, T]: a random permutation of 0..L-1 on each row's L real tokens, the
    identity on padding (the keys' order: :func:`_keys`, drawn over ``cap`` columns)."""
    return torch.argsort(_keys(attention_mask, generator, cap), dim=1)


def cutoff_rows(
    attention_mask: torch.Tensor, rate: float, generator: torch.Generator, cap: int | None = None
) -> torch.Tensor:
    """Bool [n, T], True on the int(L * rate) token rows of each sentence to zero (the rows of the
    smallest keys: :func:`_keys`, drawn over ``cap`` columns)."""
    keys = _keys(attention_mask, generator, cap)
    rank = torch.argsort(torch.argsort(keys, dim=1), dim=1)
    k = (attention_mask.sum(dim=1).double() * rate).floor().long()  # int(L * rate), in double as Python computes it
    return rank < k.unsqueeze(1)


class EmbeddingCutoff:
    """Zeroes the token rows ``rows`` ([n, T] bool) of ``model.embeddings``' output while
    ``rows`` is set (None: the output as it is). Its hook is registered once, when the loss is
    built: one registered inside every step would break a compiled step's graph
    (:mod:`clinsent.train.compiled`)."""

    def __init__(self, model: Any) -> None:
        self.rows: torch.Tensor | None = None
        model.embeddings.register_forward_hook(self._hook)

    def _hook(self, _module: Any, _inputs: Any, output: torch.Tensor) -> torch.Tensor:
        if self.rows is None:
            return output
        return output.masked_fill(self.rows.to(output.device, non_blocking=True).unsqueeze(-1), 0.0)

    @contextmanager
    def applied(self, rows: torch.Tensor) -> Iterator[None]:
        """Within the block, the embeddings' output has ``rows`` zeroed."""
        self.rows = rows
        try:
            yield
        finally:
            self.rows = None
