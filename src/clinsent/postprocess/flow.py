"""BERT-flow (Li et al. 2020, EMNLP; MED-SE Figure 2): a Glow-style normalising flow that maps
frozen sentence embeddings to an isotropic Gaussian, fitted by maximum likelihood.

As in the reference TensorFlow code (``bohanli/BERT-flow``, config ``l3_d3_w32``), each of
``levels`` levels applies ``depth`` steps of ActNorm (data-dependent initialisation), a fixed
reversed channel permutation (log-det 0) and an additive coupling whose shift network has
hidden width ``width`` and a zero-initialised last layer; after every level but the last, half
of the channels are split off and scored under N(0, I). The embedding is the concatenation of
the split-off parts and the top. The pooled vector is a 1x1 "image", so the reference's
convolutions reduce to the linear layers used here. Loss: negative log-likelihood in bits per
dimension. Fitted (the encoder frozen) with AdamW, lr 1e-3, weight decay 0.01, gradient
clipping at 1.0 and batch 32, on the evaluation set's own sentences.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn


class ActNorm(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.loc = nn.Parameter(torch.zeros(dim))
        self.log_scale = nn.Parameter(torch.zeros(dim))
        self.initialised = False

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        if not self.initialised:
            with torch.no_grad():
                self.loc.copy_(-x.mean(dim=0))
                self.log_scale.copy_(-torch.log(x.std(dim=0) + 1e-6))
            self.initialised = True
        return (x + self.loc) * torch.exp(self.log_scale), self.log_scale.sum().expand(len(x))


class AdditiveCoupling(nn.Module):
    def __init__(self, dim: int, width: int) -> None:
        super().__init__()
        self.cut = dim // 2
        last = nn.Linear(width, dim - self.cut)
        nn.init.zeros_(last.weight)
        nn.init.zeros_(last.bias)
        self.net = nn.Sequential(nn.Linear(self.cut, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(), last)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a, b = x[:, : self.cut], x[:, self.cut :]
        return torch.cat([a, b + self.net(a)], dim=1)


class Flow(nn.Module):
    def __init__(self, dim: int, levels: int = 3, depth: int = 3, width: int = 32) -> None:
        super().__init__()
        self.actnorms = nn.ModuleList()
        self.couplings = nn.ModuleList()
        self.depth, self.n_levels = depth, levels
        d = dim
        for level in range(levels):
            for _ in range(depth):
                self.actnorms.append(ActNorm(d))
                self.couplings.append(AdditiveCoupling(d, width))
            if level < levels - 1:
                d = d - d // 2

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(z, log|det dz/dx|) per row."""
        logdet = x.new_zeros(len(x))
        outs = []
        z = x
        for level in range(self.n_levels):
            for k in range(level * self.depth, (level + 1) * self.depth):
                z, ld = self.actnorms[k](z)
                logdet = logdet + ld
                z = self.couplings[k](z.flip(-1))  # fixed reversed permutation, then the coupling
            if level < self.n_levels - 1:
                split = z.size(1) // 2
                outs.append(z[:, :split])
                z = z[:, split:]
        return torch.cat([*outs, z], dim=1), logdet

    def nll_bits_per_dim(self, x: torch.Tensor) -> torch.Tensor:
        z, logdet = self(x)
        log_pz = -0.5 * (z * z).sum(dim=1) - 0.5 * z.size(1) * math.log(2 * math.pi)
        return (-(log_pz + logdet) / (z.size(1) * math.log(2.0))).mean()


def fit_flow(
    x: np.ndarray,
    seed: int,
    epochs: int = 1,
    batch_size: int = 32,
    lr: float = 1e-3,
    levels: int = 3,
    depth: int = 3,
    width: int = 32,
) -> tuple[Flow, list[float]]:
    """Fit a flow on ``x`` (rows shuffled each epoch); returns it and the per-step losses."""
    gen = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    data = torch.as_tensor(np.asarray(x, dtype=np.float32))
    flow = Flow(data.size(1), levels, depth, width)
    flow(data)  # data-dependent ActNorm initialisation on the whole fitting set
    opt = torch.optim.AdamW(flow.parameters(), lr=lr, weight_decay=0.01)
    losses = []
    for _ in range(epochs):
        order = torch.randperm(len(data), generator=gen)
        for i in range(0, len(data), batch_size):
            loss = flow.nll_bits_per_dim(data[order[i : i + batch_size]])
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(flow.parameters(), 1.0)
            opt.step()
            losses.append(float(loss.item()))
    return flow, losses


@torch.no_grad()
def flow_transform(flow: Flow, x: np.ndarray) -> np.ndarray:
    z, _ = flow(torch.as_tensor(np.asarray(x, dtype=np.float32)))
    return z.numpy().astype(np.float64)
