"""MixCSE's mixed hard negatives (Zhang et al. 2022, AAAI) and DCLR's instance weights (Zhou
et al. 2022, ACL, eq. 4 and 6), as the biomedical augmentation paper combines them (eq. 3-5).

**Mixed negatives, as MixCSE's reference code builds them** (``mixcse/models_mix.py``): with z1,
z2 the two views (after the MLP head, not normalised) and S_ij = cos(z1_i, z2_j) / tau,
- block 1: m_j = lam * z2_j + (1 - lam) * z2_{j+1 mod N}, detached; row i gets cos(z1_i, m_j) / tau
  for every j, and entry (i, i-1) is set to logit 0 (m_{i-1} is mostly the anchor's own positive:
  zeroed, not removed, so exp(0) stays in the denominator);
- block 2 (symmetric): n_i = lam * z1_i + (1 - lam) * z1_{i+1}, detached; row i gets
  cos(n_i, z2_j) / tau, entry (i, i+1) set to 0.
The loss is cross-entropy over [S | block 1 | block 2] with label i (``mix_form: reference_code``).

**Mixed negatives, as MixCSE's eq. 3 writes them** (``mix_form: paper_eq3``): one mixed negative
per anchor i and negative j != i, m_ij = lam * z2_i + (1 - lam) * z2_j (the anchor's own positive
mixed into each negative: harder negatives), detached; row i gets cos(z1_i, m_ij) / tau, and
m_ii (the positive itself) is left out of the denominator. One block (no symmetric one).

**Instance weights, the paper's form**: alpha_ij = 0 where the complementary model's cosine of
sentences i and j is >= phi, else 1, and alpha_ii = 1; a weight of 0 removes the term from the
softmax denominator (a log-weight of -inf). A mixed negative takes the weight of the sentence
that dominates it (weight 1 - lam = 0.8): block 1's column j (m_j, mostly z2_{j+1}) alpha_{i,j+1};
block 2's row i (n_i, mostly z1_{i+1}) alpha_{i+1,j}; eq. 3's m_ij (mostly z2_j) alpha_ij.
DCLR's code differs: it multiplies the logits by the
weights (a zeroed logit stays in the denominator as exp(0)), tests cos/tau > 20 phi (valid only at
tau = 0.05), adds gradient-ascended Gaussian noise negatives, runs the complementary model with
dropout on and scores with a binary cross-entropy over every entry.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from clinsent.data.encode import fingerprint
from clinsent.data.positions import Alloc, StepRows, fresh
from clinsent.losses.base import Embedded, gathered, own_text_encoder, take
from clinsent.losses.contrastive import cosine_logits
from clinsent.losses.simcse import SimCSELoss
from clinsent.methods.mixcse import MixCSESettings
from clinsent.models.base import load_transformer
from clinsent.models.encoder import Encoder


def mixed_blocks(
    z1: torch.Tensor, z2: torch.Tensor, temperature: float, lam: float, symmetric: bool = True
) -> list[torch.Tensor]:
    """Block 1 (and block 2 when ``symmetric``) of MixCSE's logits, [N, N] each."""
    z1, z2 = z1.float(), z2.float()
    n = len(z1)
    eye = torch.eye(n, device=z1.device)
    mixed = (lam * z2 + (1 - lam) * z2.roll(-1, dims=0)).detach()
    block1 = cosine_logits(z1, mixed, temperature) * (1 - eye.roll(1, dims=0))  # zero (i, i-1)
    if not symmetric:
        return [block1]
    mixed_anchor = (lam * z1 + (1 - lam) * z1.roll(-1, dims=0)).detach()
    block2 = cosine_logits(mixed_anchor, z2, temperature) * (1 - eye.roll(1, dims=1))  # zero (i, i+1)
    return [block1, block2]


def paper_block(z1: torch.Tensor, z2: torch.Tensor, temperature: float, lam: float) -> torch.Tensor:
    """MixCSE's eq. 3: [N, N] logits cos(z1_i, lam z2_i + (1 - lam) z2_j) / tau, the mixes detached
    (the diagonal, the positive itself, is left for the weights to remove)."""
    z1, z2 = z1.float(), z2.detach().float()
    # never the [N, N, d] mixes: z1_i . m_ij and |m_ij| expand into [N, N] dot products
    cross, gram = z1 @ z2.T, z2 @ z2.T
    sq = gram.diagonal()
    dot = lam * cross.diagonal().unsqueeze(1) + (1 - lam) * cross
    norm_m = (lam**2 * sq.unsqueeze(1) + 2 * lam * (1 - lam) * gram + (1 - lam) ** 2 * sq.unsqueeze(0)).clamp_min(0)
    norm = z1.norm(dim=-1, keepdim=True) * norm_m.sqrt()
    return dot / norm.clamp_min(1e-8) / temperature


Blocks = list[tuple[torch.Tensor, torch.Tensor]]  # (logits, keep weights) of each block after S


def reference_form(
    z1: torch.Tensor, z2: torch.Tensor, temperature: float, lam: float, symmetric: bool, alpha: torch.Tensor
) -> Blocks:
    blocks = mixed_blocks(z1, z2, temperature, lam, symmetric)
    weights = [alpha.roll(-1, dims=1), alpha.roll(-1, dims=0)]  # the dominant sentence's weight (see above)
    return list(zip(blocks, weights[: len(blocks)], strict=True))


def paper_form(
    z1: torch.Tensor, z2: torch.Tensor, temperature: float, lam: float, symmetric: bool, alpha: torch.Tensor
) -> Blocks:
    keep = alpha * (1 - torch.eye(len(alpha), device=alpha.device))
    return [(paper_block(z1, z2, temperature, lam), keep)]


# mix_form -> the mixed blocks and their weights
MIX_FORMS = {"reference_code": reference_form, "paper_eq3": paper_form}


def instance_weights(complementary: torch.Tensor, phi: float) -> torch.Tensor:
    """alpha [N, N]: 0 where cos(c_i, c_j) >= phi (a likely false negative), else 1; 1 on the diagonal."""
    c = F.normalize(complementary.float(), dim=-1)
    alpha = ((c @ c.T) < phi).float()
    alpha.fill_diagonal_(1.0)
    return alpha


def weighted_cross_entropy(blocks: list[torch.Tensor], weights: list[torch.Tensor] | None = None) -> torch.Tensor:
    """Cross-entropy over the concatenated blocks with label i; a weight of 0 removes a term."""
    logits = torch.cat(blocks, dim=1)
    if weights is not None:
        logits = logits + torch.log(torch.cat(weights, dim=1))  # log 0 = -inf: out of the denominator
    return F.cross_entropy(logits, torch.arange(len(logits), device=logits.device))


class MixCSELoss(SimCSELoss):
    """MixCSE with instance weighting (the biomedical augmentation paper, section 3.2, eqs. 3-5;
    Zhang et al. 2022; Zhou et al. 2022): SimCSE's softmax with mixed hard negatives added, and the
    negatives a frozen complementary model finds too similar given weight 0.

    Inputs: SimCSE's, plus ``complementary`` (the rows tokenized for the complementary model).
    Output: ``{"sentence": weighted cross-entropy}``; statistics ``mean_weight`` and
    ``zero_weight_share`` (curve columns).

    Knobs (defaults: :class:`clinsent.methods.mixcse.MixCSESettings`): ``mixing`` (add the mixed
    hard negatives), ``mix_lambda``, ``mix_form`` (``reference_code`` or ``paper_eq3``, see the
    module), ``mix_symmetric``, ``instance_weighting``, ``phi`` (its cosine threshold),
    ``complementary_model`` (None: a frozen copy of the base model), and SimCSE's
    (:class:`clinsent.losses.simcse.SimCSELoss`).

    Example: ``MixCSELoss(encoder, mix_lambda=0.2, phi=0.9)``.
    """

    def __init__(
        self,
        encoder: Encoder,
        *,
        mixing: bool = MixCSESettings.mixing,
        mix_lambda: float = MixCSESettings.mix_lambda,
        mix_form: str = MixCSESettings.mix_form,
        mix_symmetric: bool = MixCSESettings.mix_symmetric,
        instance_weighting: bool = MixCSESettings.instance_weighting,
        phi: float = MixCSESettings.phi,
        complementary_model: str | None = MixCSESettings.complementary_model,
        **simcse: Any,
    ) -> None:
        # plain values, set before nn.Module's __init__: SimCSE's __init__ builds the complementary
        # encoder (build_extras) before its MLP head, so the head draws what it drew before
        self.mixing, self.mix_lambda, self.mix_form, self.mix_symmetric = mixing, mix_lambda, mix_form, mix_symmetric
        self.instance_weighting, self.phi, self.complementary_spec = instance_weighting, phi, complementary_model
        super().__init__(encoder, **simcse)

    def statistics(self) -> dict[str, torch.Tensor]:
        """The last batch's share of in-batch negatives (i != j) whose instance weight is 0, and
        their mean weight: how much the complementary model removes."""
        return dict(self._stats)

    def build_extras(self, encoder: Encoder) -> None:
        self._stats: dict[str, torch.Tensor] = {}
        if not self.instance_weighting:
            return
        if self.complementary_spec:
            loaded = load_transformer(self.complementary_spec, encoder.max_length)
            model, tokenizer = loaded.model.to(encoder.device), loaded.tokenizer
        else:
            model, tokenizer = copy.deepcopy(encoder.model), encoder.tokenizer
        self.complementary_model = model.requires_grad_(False)
        # the complementary model reads the encoder's tokens where their tokenizers agree
        self._same_tokens = tokenizer is encoder.tokenizer or fingerprint(tokenizer) == fingerprint(encoder.tokenizer)
        self.complementary = Encoder(
            model,
            tokenizer,
            encoder.pooling,
            encoder.first_layer,
            encoder.max_length,
            encoder.device,
            precision=encoder.precision,
        )

    def train(self, mode: bool = True) -> MixCSELoss:
        super().train(mode)
        if self.instance_weighting:
            self.complementary_model.eval()
        return self

    def assemble(self, rows: StepRows, generator: torch.Generator, alloc: Alloc = fresh) -> dict[str, Any]:
        """SimCSE's views and (instance weighting) the sentences tokenized for the complementary
        model: the first view's tokens where its tokenizer is the encoder's, else encoded here."""
        batch = super().assemble(rows, generator, alloc)
        if self.instance_weighting:
            if self._same_tokens:
                batch["complementary"] = batch["features"]
            else:
                encoder = own_text_encoder(
                    self, "_complementary_encoder", self.complementary.tokenizer, self.complementary.max_length
                )
                table, _ = encoder.encode(rows.rows()["text"].astype(str).tolist())
                own = np.arange(rows.n)
                batch["complementary"] = gathered([(table, own)], table.width(own), alloc, "comp.")
        return batch

    def chunk(self, batch: dict[str, Any], start: int, stop: int) -> dict[str, Any]:
        out = super().chunk(batch, start, stop)
        if "complementary" in batch:
            out["complementary"] = take(batch["complementary"], slice(start, stop))
        return out

    def embed(self, batch: dict[str, Any], fixed: bool = True) -> Embedded:
        """SimCSE's two views and (instance weighting) the complementary model's embeddings of
        the sentences, without gradient (``complementary``)."""
        out = super().embed(batch, fixed)
        if self.instance_weighting and fixed:
            with torch.no_grad():
                out.fixed["complementary"] = self.complementary.embed_batch(batch["complementary"])
        return out

    def score(self, vectors: Mapping[str, torch.Tensor], batch: dict[str, Any]) -> dict[str, torch.Tensor]:
        z1, z2 = vectors["z1"], vectors["z2"]
        if self.instance_weighting:
            with torch.no_grad():
                alpha = instance_weights(vectors["complementary"], self.phi)
                n = len(alpha)  # the off-diagonal weights' statistics, by sums (a boolean index waits on the device)
                off = 1.0 - torch.eye(n, device=alpha.device)
                pairs = n * (n - 1) if n > 1 else float("nan")
                self._stats = {
                    "zero_weight_share": ((alpha == 0).float() * off).sum() / pairs,
                    "mean_weight": (alpha * off).sum() / pairs,
                }
        else:
            alpha = torch.ones(len(z1), len(z1), device=z1.device)
        blocks: Blocks = [(cosine_logits(z1.float(), z2.float(), self.temperature), alpha)]
        if self.mixing:
            mix = MIX_FORMS[self.mix_form]
            blocks += mix(z1, z2, self.temperature, self.mix_lambda, self.mix_symmetric, alpha)
        return {"sentence": weighted_cross_entropy([b for b, _ in blocks], [w for _, w in blocks])}
