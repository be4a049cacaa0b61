"""InfoNCE over cosine similarities (SimCSE, Gao et al. 2021, eq. 1 of MED-SE).

loss = mean_i -log( exp(sim(a_i, b_i)/tau) / sum_j exp(sim(a_i, b_j)/tau) )

One direction, positives on the diagonal, no intra-view negatives, as in SimCSE's
``cl_forward``. The papers write a sum over the batch; the reference code takes the mean.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def cosine_logits(a: torch.Tensor, b: torch.Tensor, temperature: float) -> torch.Tensor:
    return F.normalize(a, dim=-1) @ F.normalize(b, dim=-1).T / temperature


def info_nce(a: torch.Tensor, b: torch.Tensor, temperature: float) -> torch.Tensor:
    logits = cosine_logits(a.float(), b.float(), temperature)
    return F.cross_entropy(logits, torch.arange(len(a), device=a.device))
