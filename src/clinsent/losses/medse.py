"""MED-SE objective (Hwang, Yoo, Choi 2022, arXiv 2212.04734, eqs. 1-3).

L = L_sen + lambda * L_ent, where L_sen is unsupervised SimCSE over the batch (eq. 1) and
L_ent (eq. 2) is InfoNCE between the entity embeddings h_ent (entity encoder over the entity
tokens of the same forward pass) and the definition embeddings h_def (separate definition
encoder) of the sentences of the batch that carry a chosen entity, positives on the diagonal.
"""

from __future__ import annotations

import torch

from clinsent.losses.contrastive import info_nce


def entity_loss(h_ent: torch.Tensor, h_def: torch.Tensor, temperature: float) -> torch.Tensor:
    """Eq. 2 (mean over S^k); zero when fewer than one entity is in the batch."""
    if len(h_ent) == 0:
        return h_ent.new_zeros(())
    return info_nce(h_ent, h_def, temperature)


def medse_loss(z1: torch.Tensor, z2: torch.Tensor, h_ent: torch.Tensor, h_def: torch.Tensor,
               temperature: float, lam: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(total, L_sen, L_ent) for one batch (eq. 3)."""
    l_sen = info_nce(z1, z2, temperature)
    l_ent = entity_loss(h_ent, h_def, temperature)
    return l_sen + lam * l_ent, l_sen, l_ent
