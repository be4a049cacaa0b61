"""Classification heads on a pooled document embedding: two linear layers (the healthcare-LM
paper's f_MLP, section 2.4, and its note-category head, eq. 4), in the shape of RoBERTa's
classification head: dropout, dense d -> hidden, tanh, dropout, dense hidden -> classes."""

from __future__ import annotations

import torch
from torch import nn


class ClassificationHead(nn.Module):
    def __init__(self, dim: int, classes: int, hidden: int | None = None, dropout: float = 0.1) -> None:
        super().__init__()
        hidden = hidden or dim
        self.net = nn.Sequential(
            nn.Dropout(dropout), nn.Linear(dim, hidden), nn.Tanh(), nn.Dropout(dropout), nn.Linear(hidden, classes)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)
