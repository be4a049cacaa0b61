"""Contrastive Tension (Carlsson et al. 2021, ICLR, section 3; MED-SE Table 3 "CT-BERT").

Two copies of the encoder: the twin (built here, owned by the loss) embeds the first text of
each pair, the main encoder (the one saved) the second. Logit = dot product of the pooled
embeddings; loss = binary cross-entropy with logits, label 1 for identical pairs; pairs in
groups of one identical pair and seven pairs of different sentences, the two models seeing
different negatives (:mod:`clinsent.losses.ct`, as the original TensorFlow code). Why not
sentence-transformers' ContrastiveTensionLoss: its data loader loses the 1 + K group structure
once the trainer reshuffles rows, and it sums rather than averages (notes on methods, section 3).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import torch

from clinsent.losses.ct import ct_loss, ct_pairs
from clinsent.methods.base import METHODS, Method, MethodLoss, SentencePlanSettings, TrainedSettings
from clinsent.models.encoder import Encoder


@dataclass(frozen=True)
class CTSettings(TrainedSettings, SentencePlanSettings):
    pass


class CTLoss(MethodLoss):
    def __init__(self, encoder: Encoder, settings: CTSettings) -> None:
        super().__init__()
        self.encoder, self.s = encoder, settings
        self.twin_model = copy.deepcopy(encoder.model)
        self.twin = Encoder(self.twin_model, encoder.tokenizer, settings.pooling, settings.first_layer,
                            settings.max_length, encoder.device)

    def train(self, mode: bool = True) -> CTLoss:
        super().train(mode)
        self.twin_model.train(mode and self.s.dropout)
        return self

    def prepare(self, rows: pd.DataFrame, generator: torch.Generator) -> dict[str, Any]:
        rng = np.random.default_rng(int(torch.randint(2**62, (1,), generator=generator)))
        first, second, labels = ct_pairs(rows["text"].tolist(), rng)
        return {"first": self.twin.tokenize(first), "second": self.encoder.tokenize(second), "labels": labels}

    def forward(self, batch: dict[str, Any]) -> dict[str, torch.Tensor]:
        e1 = self.twin.embed_batch(batch["first"])
        e2 = self.encoder.embed_batch(batch["second"])
        return {"ct": ct_loss(e1, e2, batch["labels"])}


@METHODS.register("ct")
class ContrastiveTension(Method):
    name = "ct"
    settings_class = CTSettings

    def build_loss(self, encoder: Encoder) -> MethodLoss:
        assert isinstance(self.settings, CTSettings)
        return CTLoss(encoder, self.settings)
