"""The base of every method's loss: an ``nn.Module`` after sentence-transformers' losses.

A loss owns its extra modules (an MLP head, an entity encoder, a frozen twin), prepares one
step's batch on the CPU (``prepare``: off the step's critical path, possibly on another thread)
and returns its loss as named parts (``forward``); the trainer sums the parts and logs each as
a curve column ``loss_<part>``. A method (:mod:`clinsent.methods.base`) builds its loss in
``build_loss``, the one place that imports its loss module.

A loss is written in two halves, so that a large batch can be stepped in chunks
(:mod:`clinsent.train.chunked`):

- ``embed(batch)`` runs the encoders over the rows of a (prepared) batch and returns an
  :class:`Embedded`: the per-row vectors the loss compares across the batch (``vectors``, e.g.
  SimCSE's two views), vectors computed without gradient (``fixed``, e.g. a frozen
  complementary model's) and loss parts that simply add up over rows (``parts``, e.g. an MLM
  loss already scaled to its chunk's share of the batch);
- ``score(vectors, batch)`` computes the loss parts that compare rows (InfoNCE over the batch)
  from every row's vectors.

``forward`` is ``embed`` then ``score`` on the whole batch. ``chunk(batch, rows)`` cuts a
prepared batch to a range of its rows (``rows(batch)`` of them), trimming padding no row of
the chunk needs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
import torch
from torch import nn


@dataclass
class Embedded:
    """What ``embed`` gives for one batch or chunk (every tensor's first axis: rows of it)."""

    vectors: dict[str, torch.Tensor] = field(default_factory=dict)  # compared across the batch; gradients flow
    fixed: dict[str, torch.Tensor] = field(default_factory=dict)  # compared across the batch; no gradient
    parts: dict[str, torch.Tensor] = field(default_factory=dict)  # loss parts that add up over chunks


class MethodLoss(nn.Module):
    """A method's loss: owns its extra modules; ``prepare`` runs on the CPU (off the step's
    critical path, possibly on another thread), ``forward`` returns the named loss parts."""

    def prepare(self, rows: pd.DataFrame, generator: torch.Generator) -> dict[str, Any]:
        """Tokenize and draw everything random of one step from ``generator`` (never the global
        generators, so a resumed job draws the same). The batch holds ``n``: its row count."""
        raise NotImplementedError

    def bind(self, data: Any) -> None:
        """Called once with the job's training data before the optimiser is built: a loss whose
        modules depend on the data (e.g. a head over the documents' categories) builds them here."""

    def embed(self, batch: dict[str, Any], fixed: bool = True) -> Embedded:
        """The encoders over ``batch``'s rows (``fixed`` False: the no-gradient vectors may be
        left out, a chunk's second pass does not need them)."""
        raise NotImplementedError

    def score(self, vectors: Mapping[str, torch.Tensor], batch: dict[str, Any]) -> dict[str, torch.Tensor]:
        """The loss parts that compare rows, from the vectors (and fixed vectors) of every row."""
        return {}

    def forward(self, batch: dict[str, Any]) -> dict[str, torch.Tensor]:  # noqa: D102
        e = self.embed(batch)
        return {**e.parts, **self.score({**e.vectors, **e.fixed}, batch)}

    def rows(self, batch: dict[str, Any]) -> int:
        """How many rows ``chunk`` can cut ``batch`` into."""
        return int(batch["n"])

    def chunk(self, batch: dict[str, Any], start: int, stop: int) -> dict[str, Any]:
        """The prepared ``batch`` cut to rows ``start``..``stop - 1`` (what ``embed`` reads)."""
        raise NotImplementedError(f"{type(self).__name__} cannot be stepped in chunks")

    def statistics(self) -> dict[str, torch.Tensor]:
        """Figures of the last forward pass that are not losses (e.g. MixCSE's share of negatives
        its instance weights remove): logged beside the loss parts, curve columns ``stat_<name>``."""
        return {}


def take(
    features: Mapping[str, torch.Tensor], index: torch.Tensor | slice, mask: torch.Tensor | None = None
) -> dict[str, torch.Tensor]:
    """Rows ``index`` of a tokenized batch, its token axis cut to the longest of them (by its own
    ``attention_mask``, or ``mask`` when given): padding no chosen row needs is dropped."""
    rows = {k: v[index] for k, v in features.items() if k != "packing"}  # a chunk's packing is its own
    width = token_width(rows["attention_mask"] if mask is None else mask[index])
    return {k: v[:, :width] for k, v in rows.items()}


def token_width(mask: torch.Tensor) -> int:
    """The last real token's position + 1 over the rows of an attention mask (CPU tensors)."""
    if mask.numel() == 0:
        return 0
    real = mask.bool().any(dim=0).nonzero()
    return int(real.max()) + 1 if len(real) else 1


def block_rows(n: int, blocks: int, start: int, stop: int) -> torch.Tensor:
    """Row indices of rows ``start..stop-1`` in each of ``blocks`` stacked blocks of ``n`` rows
    (SimCSE's two views, supervised SimCSE's anchors, positives and negatives)."""
    return torch.cat([torch.arange(b * n + start, b * n + stop) for b in range(blocks)])
