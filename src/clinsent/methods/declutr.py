"""DeCLUTR (Giorgi et al. 2021, ACL) as the healthcare-LM paper trains it (section 2.3.2,
eqs. 2-3 and 5): L = L_MLM + w x L_contrastive.

Per document, ``num_anchors`` anchor spans and ``num_positives`` positives per anchor
(:mod:`clinsent.augment.declutr_spans`, the reference sampler over whitespace tokens). The
anchors are masked for MLM and that masked input also gives the anchor embeddings (one pass,
as the reference does); the positives go through the encoder unmasked and are averaged per
anchor; NT-Xent at tau over the 2N embeddings (:func:`clinsent.losses.contrastive.nt_xent`),
anchors of the same document being negatives of each other, as in the reference. Mean pooling,
no projection head.

Documents shorter than 2 x num_anchors x max_span words cannot be sampled: they are skipped and
counted when the train job reads them (the paper's Table 12 gives the share each minimum keeps;
the ``documents`` rule writes it for your notes). The paper's defaults: batch 32 documents,
learning rate 1e-5, span lengths 16-1024 by dataset (1024 for MIMIC-III), the "adjacent"
strategy, 3 epochs; ``contrastive_weight`` 1 (the paper sweeps w for the note objective).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import torch

from clinsent.augment.declutr_spans import Strategy, min_tokens, sample_spans
from clinsent.data import DataNeed
from clinsent.data.documents import DocumentRows
from clinsent.losses.contrastive import nt_xent
from clinsent.methods.base import METHODS, MethodLoss
from clinsent.methods.mlm import DocumentMethod, MlmLoss, MlmSettings
from clinsent.models.encoder import Encoder
from clinsent.models.pooling import pool
from clinsent.settings import knob


@dataclass(frozen=True)
class DeclutrSettings(MlmSettings):
    batch_size: int = knob(32, "documents per step (the paper: 32; DeCLUTR's own: 4)", minimum=2)
    num_anchors: int = knob(2, "anchor spans per document (A)", minimum=1)
    num_positives: int = knob(2, "positive spans per anchor (P), averaged into one embedding", minimum=1)
    min_span: int = knob(32, "shortest span in whitespace tokens", minimum=1)
    max_span: int = knob(512, "longest span; documents need 2 x num_anchors x max_span words", minimum=1)
    strategy: Strategy = knob("adjacent", "where positives lie: any (adjacent, overlapping or subsumed: DeCLUTR's "
                                          "default), subsuming, or adjacent (the paper)")
    temperature: float = knob(0.05, "tau of NT-Xent", exclusiveMinimum=0)
    contrastive_weight: float = knob(1.0, "w of eq. 5", minimum=0)


class DeclutrLoss(MethodLoss):
    def __init__(self, encoder: Encoder, settings: DeclutrSettings) -> None:
        super().__init__()
        self.encoder, self.s = encoder, settings
        self.mlm = MlmLoss(encoder, settings)

    def spans(self, rows: pd.DataFrame, rng: np.random.Generator) -> tuple[list[str], list[str]]:
        """(anchor texts, positive texts: num_positives per anchor, in anchor order)."""
        s = self.s
        anchors: list[str] = []
        positives: list[str] = []
        for text in rows["text"].astype(str):
            tokens = text.split()
            a_spans, p_spans = sample_spans(len(tokens), s.num_anchors, s.num_positives, s.min_span, s.max_span, rng,
                                            s.strategy)
            for a, ps in zip(a_spans, p_spans):
                anchors.append(" ".join(tokens[a.start:a.end]))
                positives.extend(" ".join(tokens[p.start:p.end]) for p in ps)
        return anchors, positives

    def prepare(self, rows: pd.DataFrame, generator: torch.Generator) -> dict[str, Any]:
        seed = int(torch.randint(0, 2**62, (1,), generator=generator))
        anchors, positives = self.spans(rows, np.random.default_rng(seed))
        return {**self.mlm.masked(anchors, generator), "positives": self.encoder.tokenize(positives)}

    def forward(self, batch: dict[str, Any]) -> dict[str, torch.Tensor]:
        s, enc = self.s, self.encoder
        mlm_loss, hs = self.mlm.lm(batch["features"], batch["labels"])
        anchors = pool(hs, batch["features"]["attention_mask"].to(enc.device), s.pooling, s.first_layer)
        positives = batch["positives"]
        p = pool(enc.hidden_states(positives), positives["attention_mask"].to(enc.device), s.pooling, s.first_layer)
        p = p.view(len(anchors), s.num_positives, -1).mean(dim=1)
        return {"mlm": mlm_loss, "contrastive": s.contrastive_weight * nt_xent(anchors, p, s.temperature)}


@METHODS.register("declutr")
class Declutr(DocumentMethod):
    name = "declutr"
    settings_class = DeclutrSettings

    def data_need(self) -> DataNeed | None:
        s = self.settings
        assert isinstance(s, DeclutrSettings)
        return DocumentRows(s.documents, s.batch_size, min_words=min_tokens(s.num_anchors, s.max_span))

    def check(self, where: str, config: Any) -> None:
        from clinsent.errors import InputError

        s = self.settings
        assert isinstance(s, DeclutrSettings)
        if s.min_span > s.max_span:
            raise InputError(f"{where}.min_span", f"min_span {s.min_span} exceeds max_span {s.max_span}",
                             "make min_span at most max_span")

    def build_loss(self, encoder: Encoder) -> MethodLoss:
        assert isinstance(self.settings, DeclutrSettings)
        return DeclutrLoss(encoder, self.settings)
