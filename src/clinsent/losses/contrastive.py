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


def nt_xent(a: torch.Tensor, b: torch.Tensor, temperature: float) -> torch.Tensor:
    """NT-Xent over the 2N embeddings of N pairs (SimCLR; pytorch-metric-learning's ``NTXentLoss``
    as DeCLUTR calls it, pair i's two members sharing label i): every embedding's positive is its
    pair's other member, its negatives all 2N - 2 others (anchors of the same document
    included), cosine / tau; the mean over the 2N embeddings. DeCLUTR's eq. 3 (symmetric InfoNCE
    with the in-view negatives)."""
    z = F.normalize(torch.cat([a, b]).float(), dim=-1)
    logits = z @ z.T / temperature
    logits = logits.masked_fill(torch.eye(len(z), dtype=torch.bool, device=z.device), float("-inf"))
    n = len(a)
    target = torch.arange(2 * n, device=z.device).roll(n)  # i's positive: i + n, and n + i's: i
    return F.cross_entropy(logits, target)
