"""Note-category pre-training (the healthcare-LM paper's own objective, section 2.3.2, eq. 4
and eq. 5): L = L_MLM + w x CE(head(e), category), e the mean-pooled embedding of the masked
document (one pass gives both), the head two layers (:class:`clinsent.models.heads.ClassificationHead`) over the documents' categories (``CATEGORY`` of NOTEEVENTS, or
``notes.category_column``), built when the train job has read them and not saved.

The paper found w = 0.1 best of {0.1, 0.3, 1.0} (Table 11; ``category_weight``). A document
without a category, or a category with one document, stops the job before training
(:mod:`clinsent.data.documents`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd
import torch
import torch.nn.functional as F

from clinsent.data import DataNeed
from clinsent.data.documents import DocumentRows
from clinsent.methods.base import METHODS, MethodLoss
from clinsent.methods.mlm import DocumentMethod, MlmLoss, MlmSettings
from clinsent.models.encoder import Encoder
from clinsent.models.heads import ClassificationHead
from clinsent.models.pooling import pool
from clinsent.settings import knob


@dataclass(frozen=True)
class NoteCategorySettings(MlmSettings):
    batch_size: int = knob(16, "documents per step (the paper: 16)", minimum=2)
    category_weight: float = knob(0.1, "w of eq. 5 (the paper sweeps 0.1, 0.3, 1.0; 0.1 was best)", minimum=0)
    head_dropout: float = knob(0.1, "dropout before each layer of the category head", minimum=0, maximum=1)


class NoteCategoryLoss(MethodLoss):
    def __init__(self, encoder: Encoder, settings: NoteCategorySettings) -> None:
        super().__init__()
        self.encoder, self.s = encoder, settings
        self.mlm = MlmLoss(encoder, settings)
        self.classes: list[str] = []
        self.head: ClassificationHead | None = None

    def bind(self, data: Any) -> None:
        self.classes = list(data.classes)
        dim = self.encoder.model.config.hidden_size
        self.head = ClassificationHead(dim, len(self.classes), dropout=self.s.head_dropout)

    def prepare(self, rows: pd.DataFrame, generator: torch.Generator) -> dict[str, Any]:
        index = {c: i for i, c in enumerate(self.classes)}
        target = torch.tensor([index[c] for c in rows["category"].astype(str)], dtype=torch.long)
        return {**self.mlm.masked(rows["text"].astype(str).tolist(), generator), "category": target}

    def forward(self, batch: dict[str, Any]) -> dict[str, torch.Tensor]:
        if self.head is None:
            raise RuntimeError("bind() the training documents before the first step")
        s, device = self.s, self.encoder.device
        mlm_loss, hs = self.mlm.lm(batch["features"], batch["labels"])
        e = pool(hs, batch["features"]["attention_mask"].to(device), s.pooling, s.first_layer)
        ce = F.cross_entropy(self.head(e), batch["category"].to(device))
        return {"mlm": mlm_loss, "category": s.category_weight * ce}


@METHODS.register("note_category")
class NoteCategory(DocumentMethod):
    name = "note_category"
    settings_class = NoteCategorySettings

    def data_need(self) -> DataNeed | None:
        s = self.settings
        assert isinstance(s, NoteCategorySettings)
        return DocumentRows(s.documents, s.batch_size, categories=True)

    def build_loss(self, encoder: Encoder) -> MethodLoss:
        assert isinstance(self.settings, NoteCategorySettings)
        return NoteCategoryLoss(encoder, self.settings)
