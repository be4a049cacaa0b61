"""Sentence poolings over a BERT-family encoder's hidden states.

``hidden_states`` is the Hugging Face tuple: index 0 is the embedding layer, index 1 the
first transformer layer, index -1 the last layer.

- ``cls``: the [CLS] state of the last layer; during training of the SimCSE-family objectives a
  fresh MLP head (Linear d->d + tanh, :class:`MlpHead`) sits on top of it and is dropped at
  embedding time, as SimCSE's unsupervised setting (``--mlp_only_train``) does;
- ``cls_before_pooler``: the raw [CLS] state, in training and at embedding time;
- ``mean``: masked mean of the last layer;
- ``first_last``: masked mean of the average of layer ``first_layer`` and the last layer.
  ``first_layer`` defaults to 1 (current SimCSE, BERT-whitening, BERT-flow); 0 reproduces
  SimCSE's early code, which averaged the embedding layer with the last layer.
Masked means include [CLS] and [SEP], as every reference implementation does.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

POOLINGS = ("cls", "cls_before_pooler", "mean", "first_last")


def masked_mean(states: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    mask = attention_mask.unsqueeze(-1).to(states.dtype)
    return (states * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)


def pool(hidden_states: Sequence[torch.Tensor], attention_mask: torch.Tensor, mode: str,
         first_layer: int = 1) -> torch.Tensor:
    """Sentence embeddings [batch, dim] from the hidden-state tuple (never with the MLP head)."""
    last = hidden_states[-1]
    if mode in ("cls", "cls_before_pooler"):
        return last[:, 0]
    if mode == "mean":
        return masked_mean(last, attention_mask)
    if mode == "first_last":
        if not 0 <= first_layer < len(hidden_states) - 1:
            raise ValueError(f"first_layer={first_layer} is outside 0..{len(hidden_states) - 2}")
        return masked_mean((hidden_states[first_layer] + last) / 2.0, attention_mask)
    raise ValueError(f"unknown pooling {mode!r}; use one of {', '.join(POOLINGS)}")


class MlpHead(nn.Module):
    """SimCSE's training-only projection on [CLS]: Linear(d, d) then tanh."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.dense = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.dense(x))
