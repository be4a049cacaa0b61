"""Note-category pre-training (the healthcare-LM paper's own objective, section 2.3.2, eq. 4
and eq. 5): L = L_MLM + w x CE(head(e), category), e the mean-pooled embedding of the masked
document (one pass gives both), the head two layers (:class:`clinsent.models.heads.ClassificationHead`)
over the documents' categories (``CATEGORY`` of NOTEEVENTS, or ``notes.category_column``),
built when the train job has read them and not saved.

The paper found w = 0.1 best of {0.1, 0.3, 1.0} (Table 11; ``category_weight``). A document
without a category, or a category with one document, stops the job before training
(:mod:`clinsent.data.documents`).
"""

from __future__ import annotations

from dataclasses import dataclass

from clinsent.config.declare import knob
from clinsent.data import DataNeed
from clinsent.data.documents import DocumentRows
from clinsent.methods.base import METHODS
from clinsent.methods.mlm import DocumentMethod, MlmSettings


@dataclass(frozen=True)
class NoteCategorySettings(MlmSettings):
    batch_size: int = knob(16, "documents per step (the paper: 16)", minimum=2)
    category_weight: float = knob(0.1, "w of eq. 5 (the paper sweeps 0.1, 0.3, 1.0; 0.1 was best)", minimum=0)
    head_dropout: float = knob(0.1, "dropout before each layer of the category head", minimum=0, maximum=1)


@METHODS.register("note_category", settings=NoteCategorySettings)
class NoteCategory(DocumentMethod[NoteCategorySettings]):
    tokenized = True  # its batches gathered from the token files
    loss_class = "clinsent.losses.note_category:NoteCategoryLoss"  # imported by build_loss alone
    reference = "note-category pre-training (the healthcare-LM paper, Taylor et al., section 2.3.2, eqs. 4-5)"

    def data_need(self) -> DataNeed | None:
        s = self.settings
        return DocumentRows(s.documents, s.batch_size, categories=True, max_length=s.max_length)
