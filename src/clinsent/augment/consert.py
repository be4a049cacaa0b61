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


def shuffled_position_ids(attention_mask: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """Position ids [n, T]: a random permutation of 0..L-1 on each row's L real tokens, the
    identity on padding."""
    n, width = attention_mask.shape
    pos = torch.arange(width).repeat(n, 1)
    lengths = attention_mask.sum(dim=1).tolist()
    for i, length in enumerate(lengths):
        pos[i, :length] = torch.randperm(int(length), generator=generator)
    return pos


def cutoff_rows(attention_mask: torch.Tensor, rate: float, generator: torch.Generator) -> torch.Tensor:
    """Bool [n, T], True on the int(L * rate) token rows of each sentence to zero."""
    n, width = attention_mask.shape
    cut = torch.zeros(n, width, dtype=torch.bool)
    for i, length in enumerate(attention_mask.sum(dim=1).tolist()):
        k = int(int(length) * rate)
        if k:
            cut[i, torch.randperm(int(length), generator=generator)[:k]] = True
    return cut


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
