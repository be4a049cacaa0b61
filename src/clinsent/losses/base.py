"""The base of every method's loss: an ``nn.Module`` after sentence-transformers' losses.

A loss owns its extra modules (an MLP head, an entity encoder, a frozen twin), prepares one
step's batch on the CPU (``prepare``: off the step's critical path, possibly on another thread)
and returns its loss as named parts (``forward``); the trainer sums the parts and logs each as
a curve column ``loss_<part>``. A method (:mod:`clinsent.methods.base`) builds its loss in
``build_loss``, the one place that imports its loss module.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import torch
from torch import nn


class MethodLoss(nn.Module):
    """A method's loss: owns its extra modules; ``prepare`` runs on the CPU (off the step's
    critical path, possibly on another thread), ``forward`` returns the named loss parts."""

    def prepare(self, rows: pd.DataFrame, generator: torch.Generator) -> dict[str, Any]:
        """Tokenize and draw everything random of one step from ``generator`` (never the global
        generators, so a resumed job draws the same)."""
        raise NotImplementedError

    def bind(self, data: Any) -> None:
        """Called once with the job's training data before the optimiser is built: a loss whose
        modules depend on the data (e.g. a head over the documents' categories) builds them here."""

    def forward(self, batch: dict[str, Any]) -> dict[str, torch.Tensor]:  # noqa: D102
        raise NotImplementedError

    def statistics(self) -> dict[str, torch.Tensor]:
        """Figures of the last forward pass that are not losses (e.g. MixCSE's share of negatives
        its instance weights remove): logged beside the loss parts, curve columns ``stat_<name>``."""
        return {}
