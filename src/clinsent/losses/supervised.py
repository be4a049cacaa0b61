"""Supervised SimCSE's loss (Gao, Yao, Chen 2021, EMNLP, section 4, eq. 5).

For anchors h_i, positives h+_i and hard negatives h-_i:
  loss = mean_i -log( e^{s(h_i, h+_i)/tau} / sum_j ( e^{s(h_i, h+_j)/tau} + e^{s(h_i, h-_j)/tau + w [i=j]} ) )
with s = cosine: the logits are [S_pos | S_neg] (N x 2N), label i, and the log-weight w
(SimCSE's ``hard_negative_weight``, default 0) is added to each anchor's own hard negative.
Without negatives it is the multiple-negatives ranking loss.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F

from clinsent.data.buckets import Group
from clinsent.data.positions import Alloc, StepRows, fresh
from clinsent.losses.base import Embedded, MethodLoss, block_rows, gathered, own_text_encoder, take
from clinsent.losses.contrastive import cosine_logits
from clinsent.methods.sup_simcse import SupSimCSESettings
from clinsent.models.encoder import Encoder
from clinsent.models.pooling import pool


def supervised_info_nce(
    anchor: torch.Tensor,
    positive: torch.Tensor,
    negative: torch.Tensor | None,
    temperature: float,
    hard_negative_weight: float = 0.0,
) -> torch.Tensor:
    logits = cosine_logits(anchor.float(), positive.float(), temperature)
    if negative is not None:
        neg = cosine_logits(anchor.float(), negative.float(), temperature)
        if hard_negative_weight:
            neg = neg + hard_negative_weight * torch.eye(len(anchor), device=neg.device)
        logits = torch.cat([logits, neg], dim=1)
    return F.cross_entropy(logits, torch.arange(len(anchor), device=anchor.device))


class SupSimCSELoss(MethodLoss):
    """Supervised SimCSE (Gao, Yao, Chen 2021, EMNLP, section 4, eq. 5): anchors against their
    entailment hypotheses (positives) and every contradiction hypothesis of the batch (hard
    negatives), InfoNCE over cosine / tau. ``objective: mnr`` trains the same loss with the
    clinical NLI study's settings: sentence-transformers' ``MultipleNegativesRankingLoss``, its
    scale 20 being tau 0.05.

    Inputs (rows of ``anchor``, ``positive``, ``negative``, or their token positions):
    ``features`` (the three columns as one 3N batch), ``n``. Output: ``{"supervised": loss}``. The pooling is the
    encoder's (``cls``: an MLP head in training only, ``cls_mlp``: kept).

    Knobs (defaults: :class:`clinsent.methods.sup_simcse.SupSimCSESettings`): ``temperature``
    (tau), ``hard_negatives`` (false: the multiple-negatives ranking loss over pairs),
    ``hard_negative_weight`` (w, SimCSE's default 0).

    Example: ``SupSimCSELoss(encoder, temperature=0.05, hard_negatives=True)``.
    """

    capturable = True  # no host value in its step: a captured step replays it (clinsent.train.graphs)

    def __init__(
        self,
        encoder: Encoder,
        *,
        temperature: float = SupSimCSESettings.temperature,
        hard_negatives: bool = SupSimCSESettings.hard_negatives,
        hard_negative_weight: float = SupSimCSESettings.hard_negative_weight,
    ) -> None:
        super().__init__()
        self.encoder, self.temperature = encoder, temperature
        self.hard_negatives, self.hard_negative_weight = hard_negatives, hard_negative_weight
        dim = encoder.model.config.hidden_size
        self.mlp = encoder.training_head(dim)

    def columns(self) -> list[str]:
        return ["anchor", "positive", "negative"] if self.hard_negatives else ["anchor", "positive"]

    def width_groups(self) -> dict[str, Group]:
        return {"rows": Group(self.encoder.max_length)}  # anchors, positives and negatives: one pass

    def widths(self, rows: StepRows) -> dict[str, int]:
        return {"rows": max(rows.tables[c].width(rows.index[c]) for c in self.columns())}

    def rows_of(self, frame: pd.DataFrame) -> StepRows:
        encoder = own_text_encoder(self, "_text_encoder", self.encoder.tokenizer, self.encoder.max_length)
        tables = {c: encoder.encode(frame[c].astype(str).tolist())[0] for c in self.columns()}
        own = np.arange(len(frame))
        return StepRows(len(frame), tables, dict.fromkeys(tables, own), frame=lambda: frame)

    def assemble(self, rows: StepRows, generator: torch.Generator, alloc: Alloc = fresh) -> dict[str, Any]:
        """The anchors, then the positives (then the hard negatives), gathered into one padded batch."""
        width = self.width("rows", self.widths(rows)["rows"])
        parts = [(rows.tables[c], rows.index[c]) for c in self.columns()]
        return {"n": rows.n, "features": gathered(parts, width, alloc)}

    def chunk(self, batch: dict[str, Any], start: int, stop: int) -> dict[str, Any]:
        """Rows ``start..stop-1``: their anchors, positives (and negatives), one pass as the batch's."""
        index = block_rows(batch["n"], len(self.columns()), start, stop)
        return {"n": stop - start, "features": take(batch["features"], index)}

    def embed(self, batch: dict[str, Any], fixed: bool = True) -> Embedded:
        """The anchors', positives' (and negatives') embeddings of one pass over all three."""
        enc, n, features = self.encoder, batch["n"], batch["features"]
        hs = enc.hidden_states(features)
        emb = pool(hs, features["attention_mask"].to(enc.device, non_blocking=True), enc.pooling, enc.first_layer)
        if self.mlp is not None:
            emb = self.mlp(emb)
        out = {"anchor": emb[:n], "positive": emb[n : 2 * n]}
        if self.hard_negatives:
            out["negative"] = emb[2 * n : 3 * n]
        return Embedded(out)

    def score(self, vectors: Mapping[str, torch.Tensor], batch: dict[str, Any]) -> dict[str, torch.Tensor]:
        loss = supervised_info_nce(
            vectors["anchor"],
            vectors["positive"],
            vectors.get("negative"),
            self.temperature,
            self.hard_negative_weight,
        )
        return {"supervised": loss}
