"""Unsupervised SimCSE (Gao, Yao, Chen 2021, EMNLP, eq. 1; MED-SE eq. 1), with ConSERT's
token augmentations as the alternative views (Yan et al. 2021, ACL, section 3.2).

Each sentence of the batch goes through the encoder twice in one pass (2N rows), so the two
views differ by their dropout masks (or, with ``augmentation``, by token shuffle or token
cutoff); the loss is InfoNCE over cosine / tau, one direction, positives on the diagonal, no
intra-view negatives (SimCSE's ``cl_forward``; :func:`clinsent.losses.contrastive.info_nce`).
With ``pooling: cls`` the pooled [CLS] passes a fresh MLP head (Linear + tanh) in training
only. Why not sentence-transformers' MultipleNegativesRankingLoss: it cannot take the
first-last pooling's layer states, the per-row augmentation draws or the MLP used in training
only, and MED-SE needs the token states of the same forward pass.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import pandas as pd
import torch

from clinsent.augment.consert import cutoff_rows, shuffled_position_ids, zero_rows_after_embeddings
from clinsent.errors import InputError
from clinsent.losses.contrastive import info_nce
from clinsent.methods.base import METHODS, Method, MethodLoss, SentencePlanSettings, TrainedSettings
from clinsent.models.encoder import Encoder
from clinsent.models.pooling import MlpHead, pool, pooling_spec
from clinsent.settings import knob


@dataclass(frozen=True)
class SimCSESettings(TrainedSettings, SentencePlanSettings):
    temperature: float = knob(0.05, "tau of InfoNCE", exclusiveMinimum=0)
    augmentation: Literal["dropout", "token_cutoff", "token_shuffle"] = knob(
        "dropout", "what makes the two views differ: dropout, or ConSERT's token_cutoff / token_shuffle")
    augmentation_rate: float = knob(0.15, "token_cutoff: share of each sentence's tokens zeroed after the "
                                          "embedding layer", minimum=0, maximum=1)


class SimCSELoss(MethodLoss):
    def __init__(self, encoder: Encoder, settings: SimCSESettings) -> None:
        super().__init__()
        self.encoder, self.s = encoder, settings
        self.build_extras(encoder)
        dim = encoder.model.config.hidden_size
        self.mlp = MlpHead(dim) if pooling_spec(settings.pooling).mlp_in_training else None

    def build_extras(self, encoder: Encoder) -> None:
        """Modules built before the MLP head (MED-SE's entity and definition encoders)."""

    def prepare(self, rows: pd.DataFrame, generator: torch.Generator, offsets: bool = False) -> dict[str, Any]:
        texts = rows["text"].tolist()
        features = self.encoder.tokenize(texts, offsets=offsets)
        doubled = {k: torch.cat([v, v]) for k, v in features.items() if k != "offset_mapping"}
        batch: dict[str, Any] = {"n": len(texts), "features": features, "doubled": doubled}
        mask = doubled["attention_mask"]
        if self.s.augmentation == "token_shuffle":
            batch["position_ids"] = shuffled_position_ids(mask, generator)
        elif self.s.augmentation == "token_cutoff":
            batch["cutoff"] = cutoff_rows(mask, self.s.augmentation_rate, generator)
        return batch

    def views(self, batch: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor, tuple[torch.Tensor, ...]]:
        """(z1, z2, hidden states of both views) for one prepared batch."""
        enc, doubled, n = self.encoder, batch["doubled"], batch["n"]
        if "position_ids" in batch:
            hs = enc.hidden_states(doubled, position_ids=batch["position_ids"])
        elif "cutoff" in batch:
            with zero_rows_after_embeddings(enc.model, batch["cutoff"]):
                hs = enc.hidden_states(doubled)
        else:
            hs = enc.hidden_states(doubled)
        emb = pool(hs, doubled["attention_mask"].to(enc.device), self.s.pooling, self.s.first_layer)
        if self.mlp is not None:
            emb = self.mlp(emb)
        return emb[:n], emb[n:], hs

    def forward(self, batch: dict[str, Any]) -> dict[str, torch.Tensor]:
        z1, z2, _ = self.views(batch)
        return {"sentence": info_nce(z1, z2, self.s.temperature)}


@METHODS.register("simcse")
class SimCSE(Method):
    name = "simcse"
    settings_class = SimCSESettings

    def check(self, where: str, config: Mapping[str, Any]) -> None:
        s = self.settings
        assert isinstance(s, SimCSESettings)
        if s.augmentation == "dropout" and not s.dropout:
            raise InputError(where, "augmentation dropout with dropout: false gives two identical views",
                             "switch dropout on, or choose augmentation token_cutoff or token_shuffle")

    def build_loss(self, encoder: Encoder) -> MethodLoss:
        assert isinstance(self.settings, SimCSESettings)
        return SimCSELoss(encoder, self.settings)
