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

from dataclasses import dataclass

from clinsent.methods.base import METHODS, Method
from clinsent.methods.knobs import SentencePlanSettings, TrainedSettings


@dataclass(frozen=True)
class CTSettings(TrainedSettings, SentencePlanSettings):
    pass


@METHODS.register("ct", settings=CTSettings)
class ContrastiveTension(Method[CTSettings]):
    tokenized = True  # its batches gathered from the token files
    loss_class = "clinsent.losses.ct:CTLoss"  # imported by build_loss alone
    reference = "Contrastive Tension (Carlsson et al. 2021, ICLR, section 3)"
    in_batch_negatives = True
    steps_in_chunks = True
