"""Continued masked language modelling on the notes (the healthcare-LM paper, Taylor et al.,
"Developing Healthcare Language Model Embedding Spaces", section 2.3.1, eq. 1): the base model
keeps pre-training with its own MLM head on whole documents (``documents.pretrain``), 15% of
the non-special tokens masked 80/10/10 (transformers' ``DataCollatorForLanguageModeling``,
:mod:`clinsent.losses.mlm`).

Defaults are the paper's Table 11 (batch 16 with 4 accumulation steps: ``batch_size`` 64
documents per step, ``accumulate: 4`` to step them as the paper's four micro-batches of 16 with
the full batch's gradient; learning rate 1e-5; AdamW; linear schedule with warm-up, whose share
the paper does not give: 0.1; 512 tokens). Epochs (3 in the paper) count
passes over the documents. The saved model is the encoder (``SentenceTransformer(path)`` with
mean pooling, and ``AutoModel.from_pretrained(path)``); the MLM head is not saved.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeVar

from clinsent.config.declare import knob
from clinsent.data import DataNeed
from clinsent.data.documents import DocumentRows
from clinsent.methods.base import METHODS, Method
from clinsent.methods.knobs import Pooling, TrainedSettings


@dataclass(frozen=True)
class MlmSettings(TrainedSettings):
    documents: Literal["pretrain", "downstream"] = knob(
        "pretrain", "the document partition trained on (documents/<partition>.parquet)"
    )
    pooling: Pooling = knob("mean", "how documents become vectors (the paper: mean of the last layer)")
    max_length: int = knob(512, "tokens per document (longer ones are truncated)", minimum=8)
    batch_size: int = knob(64, "documents per step (the paper: 16 x 4 accumulation steps: accumulate 4)", minimum=2)
    learning_rate: float = knob(1e-5, "peak learning rate (the paper's Table 11)", exclusiveMinimum=0)
    warmup_ratio: float = knob(
        0.1, "share of the steps with a linear warm-up (the paper: warm-up, share not given)", minimum=0, maximum=1
    )
    mlm_probability: float = knob(0.15, "share of the non-special tokens predicted", exclusiveMinimum=0, maximum=1)
    mask_replace_prob: float = knob(0.8, "of those, share replaced by the mask token", minimum=0, maximum=1)
    random_replace_prob: float = knob(
        0.1, "of those, share replaced by a random token (the rest stay)", minimum=0, maximum=1
    )


MlmS = TypeVar("MlmS", bound=MlmSettings)  # DeCLUTR's and note-category's settings extend MLM's


class DocumentMethod(Method[MlmS]):
    """A method trained on whole documents (continued MLM and the objectives built on it)."""

    steps_in_chunks = True

    def data_need(self) -> DataNeed | None:
        s = self.settings
        return DocumentRows(s.documents, s.batch_size, max_length=s.max_length if self.tokenized else 0)


@METHODS.register("mlm", settings=MlmSettings)
class ContinuedMLM(DocumentMethod[MlmSettings]):
    tokenized = True  # its batches gathered from the token files
    loss_class = "clinsent.losses.mlm:MlmLoss"  # imported by build_loss alone
    reference = "continued masked language modelling (the healthcare-LM paper, Taylor et al., section 2.3.1, eq. 1)"
