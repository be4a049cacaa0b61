"""The loss module of DeCLUTR (:mod:`clinsent.methods.declutr`: the papers, the equations and
the knobs): anchors masked for MLM give the anchor embeddings in the same pass, positives pass
unmasked and are averaged per anchor, NT-Xent over the 2N embeddings beside the MLM loss.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
import torch

from clinsent.augment.declutr_spans import Strategy, sample_spans
from clinsent.data.positions import fresh
from clinsent.losses.base import Embedded, MethodLoss, gathered, take
from clinsent.losses.contrastive import nt_xent
from clinsent.losses.mlm import MlmLoss
from clinsent.methods.declutr import DeclutrSettings
from clinsent.models.encoder import Encoder
from clinsent.models.pooling import pool


class DeclutrLoss(MethodLoss):
    """DeCLUTR as the healthcare-LM paper trains it (Giorgi et al. 2021; Taylor et al., section
    2.3.2, eqs. 2-3 and 5): L = L_MLM + w x NT-Xent(anchor spans, positive spans).

    Inputs (from rows of whole notes, ``text``): ``features`` (the anchors, masked for MLM, with
    their ``labels``), ``positives`` (spans overlapping, adjacent to or inside each anchor). Outputs:
    ``{"mlm": ..., "contrastive": w x nt_xent}``. Spans are pooled as the encoder pools.

    Knobs (defaults: :class:`clinsent.methods.declutr.DeclutrSettings`): ``num_anchors`` (A per
    document), ``num_positives`` (P per anchor, averaged), ``min_span`` and ``max_span`` (in
    whitespace tokens), ``strategy`` (where positives lie: any, subsuming or adjacent),
    ``temperature`` (tau of NT-Xent), ``contrastive_weight`` (w of eq. 5), and the MLM masking's
    (:class:`clinsent.losses.mlm.MlmLoss`).

    Example: ``DeclutrLoss(encoder, num_anchors=2, num_positives=2, max_span=512)``.
    """

    def __init__(
        self,
        encoder: Encoder,
        *,
        num_anchors: int = DeclutrSettings.num_anchors,
        num_positives: int = DeclutrSettings.num_positives,
        min_span: int = DeclutrSettings.min_span,
        max_span: int = DeclutrSettings.max_span,
        strategy: Strategy = DeclutrSettings.strategy,
        temperature: float = DeclutrSettings.temperature,
        contrastive_weight: float = DeclutrSettings.contrastive_weight,
        mlm_probability: float = DeclutrSettings.mlm_probability,
        mask_replace_prob: float = DeclutrSettings.mask_replace_prob,
        random_replace_prob: float = DeclutrSettings.random_replace_prob,
    ) -> None:
        super().__init__()
        self.encoder = encoder
        self.num_anchors, self.num_positives, self.min_span, self.max_span = (
            num_anchors,
            num_positives,
            min_span,
            max_span,
        )
        self.strategy, self.temperature, self.contrastive_weight = strategy, temperature, contrastive_weight
        self.mlm = MlmLoss(
            encoder,
            mlm_probability=mlm_probability,
            mask_replace_prob=mask_replace_prob,
            random_replace_prob=random_replace_prob,
        )

    def spans(self, rows: pd.DataFrame, rng: np.random.Generator) -> tuple[list[str], list[str]]:
        """(anchor texts, positive texts: num_positives per anchor, in anchor order)."""
        anchors: list[str] = []
        positives: list[str] = []
        lengths = (self.num_anchors, self.num_positives, self.min_span, self.max_span)
        for text in rows["text"].astype(str):
            tokens = text.split()
            a_spans, p_spans = sample_spans(len(tokens), *lengths, rng, self.strategy)
            for a, ps in zip(a_spans, p_spans):
                anchors.append(" ".join(tokens[a.start : a.end]))
                positives.extend(" ".join(tokens[p.start : p.end]) for p in ps)
        return anchors, positives

    def prepare(self, rows: pd.DataFrame, generator: torch.Generator) -> dict[str, Any]:
        """Spans drawn from each document's words (a new text every step), encoded by the fast
        tokenizer's own batch encode straight into arrays (:class:`clinsent.data.encode.TextEncoder`),
        the anchors masked for MLM."""
        seed = int(torch.randint(0, 2**62, (1,), generator=generator))
        anchors, positives = self.spans(rows, np.random.default_rng(seed))
        table, _ = self.mlm.text_encoder().encode(positives)
        own = np.arange(len(positives))
        width = self.width("positives", table.width(own))
        return {**self.mlm.masked(anchors, generator), "positives": gathered([(table, own)], width, fresh)}

    def chunk(self, batch: dict[str, Any], start: int, stop: int) -> dict[str, Any]:
        """Anchors ``start..stop-1`` (masked, with their MLM share) and their positives."""
        p = self.num_positives
        return {
            **self.mlm.chunk(batch, start, stop),
            "positives": take(batch["positives"], slice(start * p, stop * p)),
        }

    def embed(self, batch: dict[str, Any], fixed: bool = True) -> Embedded:
        """The MLM loss of the masked anchors (a part), the anchors' embeddings from that pass and
        the positives' averaged per anchor."""
        enc = self.encoder
        mlm_loss, hs = self.mlm.loss_and_states(batch)
        anchors = pool(
            hs, batch["features"]["attention_mask"].to(enc.device, non_blocking=True), enc.pooling, enc.first_layer
        )
        positives = batch["positives"]
        p = pool(
            enc.hidden_states(positives),
            positives["attention_mask"].to(enc.device, non_blocking=True),
            enc.pooling,
            enc.first_layer,
        )
        p = p.view(len(anchors), self.num_positives, -1).mean(dim=1)
        return Embedded({"anchor": anchors, "positive": p}, parts={"mlm": mlm_loss})

    def score(self, vectors: Mapping[str, torch.Tensor], batch: dict[str, Any]) -> dict[str, torch.Tensor]:
        contrastive = nt_xent(vectors["anchor"], vectors["positive"], self.temperature)
        return {"contrastive": self.contrastive_weight * contrastive}
