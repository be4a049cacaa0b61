"""MED-SE (Hwang, Yoo, Choi 2022, arXiv 2212.04734, eq. 3): L = L_sen + lambda * L_ent.

L_sen is unsupervised SimCSE over the batch (eq. 1, :mod:`clinsent.methods.simcse`). L_ent
(eq. 2) is InfoNCE between entity embeddings h_ent and definition embeddings h_def of the
batch's sentences whose chosen entity has a definition and survived truncation (S^k),
positives on the diagonal. h_ent: the chosen entity's tokens from the *same* forward pass
(first view's last layer; the span is mapped from MedCAT character offsets through the
tokenizer's offset mapping) through an entity encoder (:mod:`clinsent.models.entity_encoder`,
Table 8) and mean pooling. h_def: a separate definition encoder (default a copy of the base
model) with its own pooling. Table 5's controls: ``perturbation`` random_tokens,
shuffle_pairs, sentence_pooling (:mod:`clinsent.train.perturb`). No public code exists; the
choices the paper leaves open are knobs (definition pooling, whether it trains).
"""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass
from typing import Any, Literal

import pandas as pd
import torch

from clinsent.data import DataNeed
from clinsent.data.plan import SentencePlan
from clinsent.losses.medse import entity_loss
from clinsent.losses.contrastive import info_nce
from clinsent.methods.base import METHODS, MethodLoss, Pooling
from clinsent.methods.simcse import SimCSE, SimCSELoss, SimCSESettings
from clinsent.models.base import load_transformer
from clinsent.models.encoder import Encoder
from clinsent.models.entity_encoder import EntityEncoder
from clinsent.settings import knob
from clinsent.train.perturb import derangement, random_token_mask
from clinsent.train.spans import span_token_mask


@dataclass(frozen=True)
class MedSESettings(SimCSESettings):
    lam: float = knob(0.1, "weight of the entity-level loss (eq. 3)", key="lambda", minimum=0)
    entity_encoder: Literal["mean", "bilstm", "fc", "transformer", "cross_attention"] = knob(
        "transformer", "entity encoder over the span (Table 8)")
    entity_layers: int = knob(1, "layers of the entity encoder", minimum=1)
    perturbation: Literal["none", "random_tokens", "shuffle_pairs", "sentence_pooling"] = knob(
        "none", "Table 5's controls")
    definition_model: str | None = knob(None, "the definition encoder (a base_models form); null: a copy of the base model")
    definition_pooling: Pooling | None = knob(None, "the definition encoder's pooling; null: the sentence pooling")
    definition_trainable: bool = knob(True, "train the definition encoder (false: no gradient, no dropout)")
    definition_max_length: int = knob(64, "tokens per definition", minimum=8)


class MedSELoss(SimCSELoss):
    s: MedSESettings

    def build_extras(self, encoder: Encoder) -> None:
        s = self.s
        dim = encoder.model.config.hidden_size
        self.entity_encoder = EntityEncoder(s.entity_encoder, dim, layers=s.entity_layers)
        if s.definition_model:
            loaded = load_transformer(s.definition_model, s.definition_max_length)
            self.definition_model, tokenizer = loaded.model.to(encoder.device), loaded.tokenizer
        else:
            self.definition_model, tokenizer = copy.deepcopy(encoder.model), encoder.tokenizer
        if self.definition_model.config.hidden_size != dim:
            raise ValueError(f"definition model width {self.definition_model.config.hidden_size} != encoder width {dim}")
        self.definition_model.requires_grad_(s.definition_trainable)
        self.definitions = Encoder(self.definition_model, tokenizer, s.definition_pooling or s.pooling, s.first_layer,
                                   s.definition_max_length, encoder.device)

    def train(self, mode: bool = True) -> MedSELoss:
        super().train(mode)
        if not self.s.definition_trainable:
            self.definition_model.eval()  # a frozen encoder: no dropout either
        return self

    def prepare(self, rows: pd.DataFrame, generator: torch.Generator, offsets: bool = True) -> dict[str, Any]:
        batch = super().prepare(rows, generator, offsets=True)
        features = batch["features"]
        masks, keep, definitions = [], [], []
        for i, (start, end, definition) in enumerate(zip(rows["start"], rows["end"], rows["definition"], strict=True)):
            if not isinstance(definition, str):
                continue
            mask = span_token_mask(features["offset_mapping"][i], int(start), int(end))
            if not bool(mask.any()):
                continue  # truncated away
            if self.s.perturbation == "sentence_pooling":
                mask = features["attention_mask"][i].bool()
            elif self.s.perturbation == "random_tokens":
                mask = random_token_mask(mask[None], features["attention_mask"][i][None], generator)[0]
            masks.append(mask)
            keep.append(i)
            definitions.append(definition)
        batch["keep"] = keep
        if keep:
            batch["span_mask"] = torch.stack(masks)
            batch["definitions"] = self.definitions.tokenize(definitions)
            if self.s.perturbation == "shuffle_pairs":
                batch["pairing"] = derangement(len(keep), generator)
        return batch

    def forward(self, batch: dict[str, Any]) -> dict[str, torch.Tensor]:
        z1, z2, hs = self.views(batch)
        l_sen = info_nce(z1, z2, self.s.temperature)
        keep = batch["keep"]
        if not keep:
            return {"sentence": l_sen, "entity": l_sen.new_zeros(())}
        last = hs[-1][:batch["n"]].float()
        device = last.device
        attention = batch["features"]["attention_mask"][keep].to(device)
        h_ent = self.entity_encoder(last[keep], batch["span_mask"].to(device), attention)
        with torch.set_grad_enabled(self.s.definition_trainable and torch.is_grad_enabled()):
            h_def = self.definitions.embed_batch(batch["definitions"])
        if "pairing" in batch:
            h_def = h_def[batch["pairing"].to(device)]
        return {"sentence": l_sen, "entity": self.s.lam * entity_loss(h_ent, h_def, self.s.temperature)}


@METHODS.register("medse")
class MedSE(SimCSE):
    name = "medse"
    settings_class = MedSESettings

    def data_need(self) -> DataNeed | None:
        need = super().data_need()
        assert isinstance(need, SentencePlan)
        return dataclasses.replace(need, entities=True)

    def extra_models(self) -> list[str]:
        assert isinstance(self.settings, MedSESettings)
        return [self.settings.definition_model] if self.settings.definition_model else []

    def build_loss(self, encoder: Encoder) -> MethodLoss:
        assert isinstance(self.settings, MedSESettings)
        return MedSELoss(encoder, self.settings)
