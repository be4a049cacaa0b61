"""Supervised SimCSE's loss (Gao, Yao, Chen 2021, EMNLP, section 4, eq. 5).

For anchors h_i, positives h+_i and hard negatives h-_i:
  loss = mean_i -log( e^{s(h_i, h+_i)/tau} / sum_j ( e^{s(h_i, h+_j)/tau} + e^{s(h_i, h-_j)/tau + w [i=j]} ) )
with s = cosine: the logits are [S_pos | S_neg] (N x 2N), label i, and the log-weight w
(SimCSE's ``hard_negative_weight``, default 0) is added to each anchor's own hard negative.
Without negatives it is the multiple-negatives ranking loss.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from clinsent.losses.contrastive import cosine_logits


def supervised_info_nce(anchor: torch.Tensor, positive: torch.Tensor, negative: torch.Tensor | None,
                        temperature: float, hard_negative_weight: float = 0.0) -> torch.Tensor:
    logits = cosine_logits(anchor.float(), positive.float(), temperature)
    if negative is not None:
        neg = cosine_logits(anchor.float(), negative.float(), temperature)
        if hard_negative_weight:
            neg = neg + hard_negative_weight * torch.eye(len(anchor), device=neg.device)
        logits = torch.cat([logits, neg], dim=1)
    return F.cross_entropy(logits, torch.arange(len(anchor), device=anchor.device))
