"""Sentence poolings over a BERT-family encoder's hidden states: one table, :data:`POOLINGS`.

Each pooling name maps, in one place, to (a) the torch function used in training and in the
trainer's evaluations, (b) the stock sentence-transformers modules of the saved model, which
embed exactly like (a), and (c) whether the SimCSE-family objectives train it through an MLP.

``hidden_states`` is the Hugging Face tuple: index 0 is the embedding layer, index 1 the
first transformer layer, index -1 the last layer.

- ``cls``: the [CLS] state of the last layer; during training of the SimCSE-family objectives a
  fresh MLP head (Linear d->d + tanh, :class:`MlpHead`) sits on top of it and is dropped at
  embedding time, as SimCSE's unsupervised setting (``--mlp_only_train``) does;
- ``cls_mlp``: the [CLS] state through the MLP head in training *and* at embedding time (saved as a
  ``Dense`` module with tanh after the pooling): SimCSE's supervised recipe ("[CLS] with MLP"),
  which BioSimCSE's supervised rows follow;
- ``cls_before_pooler``: the raw [CLS] state, in training and at embedding time;
- ``mean``: masked mean of the last layer;
- ``first_last``: masked mean of the average of layer ``first_layer`` and the last layer.
  ``first_layer`` defaults to 1 (current SimCSE, BERT-whitening, BERT-flow); 0 reproduces
  SimCSE's early code, which averaged the embedding layer with the last layer. Saved as a
  ``WeightedLayerPooling`` with weights 1 on the two layers, then mean pooling.
Masked means include [CLS] and [SEP], as every reference implementation does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn


def masked_mean(states: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    mask = attention_mask.unsqueeze(-1).to(states.dtype)
    return (states * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)


def _cls(hs: Sequence[torch.Tensor], mask: torch.Tensor, first_layer: int) -> torch.Tensor:
    return hs[-1][:, 0].float()


def _mean(hs: Sequence[torch.Tensor], mask: torch.Tensor, first_layer: int) -> torch.Tensor:
    return masked_mean(hs[-1].float(), mask)


def _first_last(hs: Sequence[torch.Tensor], mask: torch.Tensor, first_layer: int) -> torch.Tensor:
    if not 0 <= first_layer < len(hs) - 1:
        raise ValueError(f"first_layer={first_layer} is outside 0..{len(hs) - 2}")
    return masked_mean((hs[first_layer].float() + hs[-1].float()) / 2.0, mask)


def _stock(mode: str) -> Callable[[Any, int], list[Any]]:
    def modules(transformer: Any, first_layer: int) -> list[Any]:
        from sentence_transformers.sentence_transformer.modules import Pooling

        return [Pooling(transformer.get_embedding_dimension(), mode)]

    return modules


def _first_last_modules(transformer: Any, first_layer: int) -> list[Any]:
    from sentence_transformers.sentence_transformer.modules import Pooling, WeightedLayerPooling

    dim = transformer.get_embedding_dimension()
    n_layers = transformer.model.config.num_hidden_layers
    weights = torch.zeros(n_layers + 1 - first_layer)
    weights[0] = 1.0
    weights[-1] = 1.0
    transformer.model.config.output_hidden_states = True
    return [
        WeightedLayerPooling(dim, n_layers, first_layer, nn.Parameter(weights, requires_grad=False)),
        Pooling(dim, "mean"),
    ]


@dataclass(frozen=True)
class PoolingSpec:
    torch_pool: Callable[[Sequence[torch.Tensor], torch.Tensor, int], torch.Tensor]
    saved_modules: Callable[
        [Any, int], list[Any]
    ]  # (sentence-transformers Transformer, first_layer) -> modules after it
    mlp_in_training: bool
    mlp_at_test: bool = False  # the MLP head is part of the model: trained, evaluated and saved (a Dense)


POOLINGS: dict[str, PoolingSpec] = {
    "cls": PoolingSpec(_cls, _stock("cls"), mlp_in_training=True),
    "cls_mlp": PoolingSpec(_cls, _stock("cls"), mlp_in_training=True, mlp_at_test=True),
    "cls_before_pooler": PoolingSpec(_cls, _stock("cls"), mlp_in_training=False),
    "mean": PoolingSpec(_mean, _stock("mean"), mlp_in_training=False),
    "first_last": PoolingSpec(_first_last, _first_last_modules, mlp_in_training=False),
}


def pooling_spec(mode: str) -> PoolingSpec:
    if mode not in POOLINGS:
        raise ValueError(f"unknown pooling {mode!r}; use one of {', '.join(POOLINGS)}")
    return POOLINGS[mode]


def pool(
    hidden_states: Sequence[torch.Tensor], attention_mask: torch.Tensor, mode: str, first_layer: int = 1
) -> torch.Tensor:
    """Sentence embeddings [batch, dim] from the hidden-state tuple (never with the MLP head)."""
    return pooling_spec(mode).torch_pool(hidden_states, attention_mask, first_layer)


class MlpHead(nn.Module):
    """SimCSE's projection on [CLS]: Linear(d, d) then tanh (training-only for ``cls``, kept by ``cls_mlp``)."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.dense = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.dense(x))

    def as_dense(self) -> Any:
        """The head as sentence-transformers' ``Dense`` module (tanh) sharing this head's Linear,
        so a saved model carries the trained weights."""
        from sentence_transformers.sentence_transformer.modules import Dense

        dense = Dense(self.dense.in_features, self.dense.out_features, activation_function=nn.Tanh())
        dense.linear = self.dense
        return dense
