"""Sentence poolings over a BERT-family encoder's hidden states.

``hidden_states`` is the Hugging Face tuple: index 0 is the embedding layer, index 1 the
first transformer layer, index -1 the last layer.

- ``cls``: the raw [CLS] state of the last layer;
- ``mean``: masked mean of the last layer;
- ``first_last``: masked mean of the average of layer ``first_layer`` and the last layer.
  ``first_layer`` defaults to 1 (current SimCSE, BERT-whitening, BERT-flow); 0 reproduces
  SimCSE's early code, which averaged the embedding layer with the last layer.
Masked means include [CLS] and [SEP], as every reference implementation does.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

POOLINGS = ("cls", "mean", "first_last")


def masked_mean(states: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    mask = attention_mask.unsqueeze(-1).to(states.dtype)
    return (states * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)


def pool(hidden_states: Sequence[torch.Tensor], attention_mask: torch.Tensor, mode: str,
         first_layer: int = 1) -> torch.Tensor:
    """Sentence embeddings [batch, dim] from the hidden-state tuple."""
    last = hidden_states[-1]
    if mode == "cls":
        return last[:, 0]
    if mode == "mean":
        return masked_mean(last, attention_mask)
    if mode == "first_last":
        if not 0 <= first_layer < len(hidden_states) - 1:
            raise ValueError(f"first_layer={first_layer} is outside 0..{len(hidden_states) - 2}")
        return masked_mean((hidden_states[first_layer] + last) / 2.0, attention_mask)
    raise ValueError(f"unknown pooling {mode!r}; use one of {', '.join(POOLINGS)}")
