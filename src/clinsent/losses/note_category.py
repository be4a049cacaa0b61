"""The loss module of note-category pre-training (:mod:`clinsent.methods.note_category`: the
paper, the equations and the knobs): the MLM loss and a category head over the mean-pooled
embedding of the same masked pass, the head built once the job has read the categories.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F

from clinsent.data.buckets import Group
from clinsent.data.positions import Alloc, StepRows, fresh
from clinsent.losses.base import Embedded, MethodLoss
from clinsent.losses.mlm import MlmLoss
from clinsent.methods.note_category import NoteCategorySettings
from clinsent.models.encoder import Encoder
from clinsent.models.heads import ClassificationHead
from clinsent.models.pooling import pool


class NoteCategoryLoss(MethodLoss):
    """Note-category pre-training (the healthcare-LM paper, Taylor et al., section 2.3.2, eqs. 4-5):
    L = L_MLM + w x CE(head(e), category), e the mean-pooled embedding of the masked document
    (one pass gives both), the head two layers over the documents' categories (not saved).

    Inputs (rows of ``text`` and ``category``, or their token positions and category codes):
    ``features`` (masked, with ``labels``),
    ``category`` (class indices), ``rows_total``. Outputs: ``{"mlm": ..., "category": w x CE}``.
    The document embedding is pooled as the encoder pools.

    Knobs (defaults: :class:`clinsent.methods.note_category.NoteCategorySettings`):
    ``category_weight`` (w of eq. 5), ``head_dropout`` (before each layer of the head), and the MLM
    masking's (:class:`clinsent.losses.mlm.MlmLoss`).

    Example: ``NoteCategoryLoss(encoder, category_weight=0.1)``; ``bind`` it to the training
    documents (their categories) before the first step.
    """

    capturable = True  # no host value in its step: a captured step replays it (clinsent.train.graphs)

    def __init__(
        self,
        encoder: Encoder,
        *,
        category_weight: float = NoteCategorySettings.category_weight,
        head_dropout: float = NoteCategorySettings.head_dropout,
        mlm_probability: float = NoteCategorySettings.mlm_probability,
        mask_replace_prob: float = NoteCategorySettings.mask_replace_prob,
        random_replace_prob: float = NoteCategorySettings.random_replace_prob,
    ) -> None:
        super().__init__()
        self.encoder, self.category_weight, self.head_dropout = encoder, category_weight, head_dropout
        self.mlm = MlmLoss(
            encoder,
            mlm_probability=mlm_probability,
            mask_replace_prob=mask_replace_prob,
            random_replace_prob=random_replace_prob,
        )
        self.classes: list[str] = []
        self.head: ClassificationHead | None = None

    def bind(self, data: Any) -> None:
        self.classes = list(data.classes)
        dim = self.encoder.model.config.hidden_size
        self.head = ClassificationHead(dim, len(self.classes), dropout=self.head_dropout)

    def width_groups(self) -> dict[str, Group]:
        return self.mlm.width_groups()

    def widths(self, rows: StepRows) -> dict[str, int]:
        return self.mlm.widths(rows)

    def rows_of(self, frame: pd.DataFrame) -> StepRows:
        """The documents tokenized, each one's category as its index among the bound classes."""
        index = {c: i for i, c in enumerate(self.classes)}
        codes = np.array([index[c] for c in frame["category"].astype(str)], dtype=np.int64)
        rows = self.mlm.rows_of(frame)
        return StepRows(rows.n, rows.tables, rows.index, {"category": codes}, frame=rows.frame)

    def assemble(self, rows: StepRows, generator: torch.Generator, alloc: Alloc = fresh) -> dict[str, Any]:
        return {
            **self.mlm.assemble(rows, generator, alloc),
            "category": torch.from_numpy(np.asarray(rows.values["category"], dtype=np.int64)),
            "rows_total": rows.n,
        }

    def chunk(self, batch: dict[str, Any], start: int, stop: int) -> dict[str, Any]:
        return {
            **self.mlm.chunk(batch, start, stop),
            "category": batch["category"][start:stop],
            "rows_total": batch["rows_total"],
        }

    def embed(self, batch: dict[str, Any], fixed: bool = True) -> Embedded:
        """Both parts add up over documents: the MLM loss (its share of the masked positions) and
        the category cross-entropy (its share of the documents)."""
        if self.head is None:
            raise RuntimeError("bind() the training documents before the first step")
        enc, device = self.encoder, self.encoder.device
        mlm_loss, hs = self.mlm.loss_and_states(batch)
        e = pool(hs, batch["features"]["attention_mask"].to(device, non_blocking=True), enc.pooling, enc.first_layer)
        ce = F.cross_entropy(self.head(e), batch["category"].to(device, non_blocking=True))
        if batch["n"] != batch["rows_total"]:
            ce = ce * (batch["n"] / batch["rows_total"])
        return Embedded(parts={"mlm": mlm_loss, "category": self.category_weight * ce})
