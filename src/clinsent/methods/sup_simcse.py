"""Supervised SimCSE (Gao, Yao, Chen 2021, EMNLP, section 4, eq. 5): NLI entailment pairs as
positives, contradiction hypotheses as hard negatives, InfoNCE over the in-batch positives and
all hard negatives, tau 0.05 (:func:`clinsent.losses.supervised.supervised_info_nce`).

Trains on training rows (``train_data``: a key of the config's ``training_data``, read by an
NLI reader into ``anchor``, ``positive``, ``negative``). The 3N sentences of a batch go
through the encoder in one pass, as SimCSE's ``cl_forward`` does. ``hard_negatives: false``
drops the negatives: the multiple-negatives ranking loss. With ``pooling: cls`` the MLP head
trains and is not saved, as for the unsupervised objectives.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd
import torch

from clinsent.data import DataNeed
from clinsent.data.rows import TrainingRows
from clinsent.errors import InputError
from clinsent.losses.supervised import supervised_info_nce
from clinsent.methods.base import METHODS, Method, MethodLoss, Pooling, TrainedSettings
from clinsent.models.encoder import Encoder
from clinsent.models.pooling import MlpHead, pool, pooling_spec
from clinsent.registry import did_you_mean
from clinsent.settings import knob


@dataclass(frozen=True)
class SupSimCSESettings(TrainedSettings):
    train_data: str = knob("", "a key of training_data (NLI triplets: anchor, positive, negative)")
    pooling: Pooling = knob("cls", "as for every method; SimCSE's supervised setting uses cls with the MLP")
    temperature: float = knob(0.05, "tau", exclusiveMinimum=0)
    hard_negatives: bool = knob(True, "use the contradiction hypotheses as hard negatives (false: MNR loss)")
    hard_negative_weight: float = knob(0.0, "log-weight added to each anchor's own hard negative (SimCSE: 0)")


class SupSimCSELoss(MethodLoss):
    def __init__(self, encoder: Encoder, settings: SupSimCSESettings) -> None:
        super().__init__()
        self.encoder, self.s = encoder, settings
        dim = encoder.model.config.hidden_size
        self.mlp = MlpHead(dim) if pooling_spec(settings.pooling).mlp_in_training else None

    def columns(self) -> list[str]:
        return ["anchor", "positive", "negative"] if self.s.hard_negatives else ["anchor", "positive"]

    def prepare(self, rows: pd.DataFrame, generator: torch.Generator) -> dict[str, Any]:
        texts = [t for c in self.columns() for t in rows[c].astype(str).tolist()]
        return {"n": len(rows), "features": self.encoder.tokenize(texts)}

    def forward(self, batch: dict[str, Any]) -> dict[str, torch.Tensor]:
        enc, n, features = self.encoder, batch["n"], batch["features"]
        hs = enc.hidden_states(features)
        emb = pool(hs, features["attention_mask"].to(enc.device), self.s.pooling, self.s.first_layer)
        if self.mlp is not None:
            emb = self.mlp(emb)
        negative = emb[2 * n:3 * n] if self.s.hard_negatives else None
        loss = supervised_info_nce(emb[:n], emb[n:2 * n], negative, self.s.temperature, self.s.hard_negative_weight)
        return {"supervised": loss}


@METHODS.register("sup_simcse")
class SupervisedSimCSE(Method):
    name = "sup_simcse"
    settings_class = SupSimCSESettings

    def data_need(self) -> DataNeed | None:
        s = self.settings
        assert isinstance(s, SupSimCSESettings)
        columns = ("anchor", "positive", "negative") if s.hard_negatives else ("anchor", "positive")
        return TrainingRows(s.train_data, columns, s.batch_size)

    def check(self, where: str, config: Mapping[str, Any]) -> None:
        s = self.settings
        assert isinstance(s, SupSimCSESettings)
        sources = list((config.get("training_data") or {}))
        if s.train_data not in sources:
            raise InputError(f"{where}.train_data", f"{s.train_data!r} is not a key of training_data "
                             f"{sources}{did_you_mean(s.train_data, sources)}",
                             "name a training_data entry (e.g. NLI triplets from format nli_jsonl)")

    def build_loss(self, encoder: Encoder) -> MethodLoss:
        assert isinstance(self.settings, SupSimCSESettings)
        return SupSimCSELoss(encoder, self.settings)
