"""MED-SE (Hwang, Yoo, Choi 2022, arXiv 2212.04734, eq. 3): L = L_sen + lambda * L_ent.

L_sen is unsupervised SimCSE over the batch (eq. 1, :mod:`clinsent.methods.simcse`). L_ent
(eq. 2) is InfoNCE between entity embeddings h_ent and definition embeddings h_def of the
batch's sentences whose chosen entity has a definition and survived truncation (S^k),
positives on the diagonal. h_ent: the chosen entity's tokens from the *same* forward pass
(first view's last layer; the span is mapped from MedCAT character offsets through the
tokenizer's offset mapping) through an entity encoder (:mod:`clinsent.models.entity_encoder`,
Table 8) and mean pooling. h_def: a separate definition encoder (default a copy of the base
model) with its own pooling. Table 5's controls: ``perturbation`` random_tokens,
shuffle_pairs, sentence_pooling. The loss module, with the span mapping and the perturbations,
is :mod:`clinsent.losses.medse`. No public code exists; the
choices the paper leaves open are knobs (definition pooling, whether it trains).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Literal

from clinsent.config.declare import knob
from clinsent.data import DataNeed
from clinsent.data.plan import SentencePlan
from clinsent.methods.base import METHODS
from clinsent.methods.knobs import Pooling
from clinsent.methods.simcse import SimCSE, SimCSESettings


@dataclass(frozen=True)
class MedSESettings(SimCSESettings):
    lam: float = knob(0.1, "weight of the entity-level loss (eq. 3)", key="lambda", minimum=0)
    entity_encoder: Literal["mean", "bilstm", "fc", "transformer", "cross_attention"] = knob(
        "transformer", "entity encoder over the span (Table 8)"
    )
    entity_layers: int = knob(1, "layers of the entity encoder", minimum=1)
    perturbation: Literal["none", "random_tokens", "shuffle_pairs", "sentence_pooling"] = knob(
        "none", "Table 5's controls"
    )
    definition_model: str | None = knob(
        None, "the definition encoder (a base_models form); null: a copy of the base model"
    )
    definition_pooling: Pooling | None = knob(None, "the definition encoder's pooling; null: the sentence pooling")
    definition_trainable: bool = knob(True, "train the definition encoder (false: no gradient, no dropout)")
    definition_max_length: int = knob(64, "tokens per definition", minimum=8)


@METHODS.register("medse", settings=MedSESettings)
class MedSE(SimCSE[MedSESettings]):
    loss_class = "clinsent.losses.medse:MedSELoss"  # imported by build_loss alone
    reference = "MED-SE (Hwang, Yoo, Choi 2022, arXiv 2212.04734, eq. 3: L = L_sen + lambda L_ent)"

    def data_need(self) -> DataNeed | None:
        need = super().data_need()
        assert isinstance(need, SentencePlan)
        s = self.settings
        return dataclasses.replace(
            need, entities=True, definition_length=s.definition_max_length, definition_model=s.definition_model or ""
        )

    def extra_models(self) -> list[str]:
        return [self.settings.definition_model] if self.settings.definition_model else []
