"""Contrastive Tension (Carlsson et al. 2021, ICLR; MED-SE Table 3 "CT-BERT").

Two independent copies of the encoder: model 1 embeds the first sentence of each pair,
model 2 (the one kept) the second. The logit of a pair is the dot product of the two
embeddings (no normalisation); the loss is binary cross-entropy with logits, label 1 for
identical pairs and 0 otherwise, averaged over pairs. Pairs come in groups of 1 + K:
one identical pair followed by K = 7 pairs of different sentences, and the two models see
*different* negative sentences (as in the original TensorFlow code).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F

from clinsent.losses.base import Embedded, MethodLoss, take
from clinsent.methods.ct import CTSettings
from clinsent.models.encoder import Encoder

GROUP_SIZE = 8  # one positive and seven negatives


def ct_pairs(
    texts: list[str], rng: np.random.Generator, group_size: int = GROUP_SIZE
) -> tuple[list[str], list[str], torch.Tensor]:
    """(texts for model 1, texts for model 2, labels) from one batch of distinct sentences.

    The batch is cut into groups of ``group_size`` sentences (a short last group is kept when it
    has at least one negative). In a group [a, x1..xK], model 1 gets [a, x1..xK] and model 2
    gets [a, x_s(1)..x_s(K)], where s is a random cyclic derangement, so no negative pair is
    identical and the models' negative sentences differ.
    """
    first: list[str] = []
    second: list[str] = []
    labels: list[float] = []
    for g in range(0, len(texts), group_size):
        group = texts[g : g + group_size]
        if len(group) < 3:  # one anchor plus at least two negatives, so a derangement exists
            break
        anchor, negatives = group[0], group[1:]
        perm = rng.permutation(len(negatives))
        shifted = np.empty_like(perm)
        shifted[perm] = np.roll(perm, -1)  # k -> next element of a single random cycle: no fixed point
        first += [anchor, *negatives]
        second += [anchor, *[negatives[int(j)] for j in shifted]]
        labels += [1.0] + [0.0] * len(negatives)
    return first, second, torch.tensor(labels)


def ct_logits(e1: torch.Tensor, e2: torch.Tensor) -> torch.Tensor:
    """Dot product of each pair's two embeddings: [n]."""
    return (e1.float() * e2.float()).sum(dim=-1)


def ct_loss(e1: torch.Tensor, e2: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    return F.binary_cross_entropy_with_logits(ct_logits(e1, e2), labels.to(e1.device, non_blocking=True).float())


class CTLoss(MethodLoss):
    """Contrastive Tension (Carlsson et al. 2021, ICLR, section 3): binary cross-entropy on the
    dot product of two encoders' embeddings, label 1 for the same sentence, 0 for another one.

    Inputs (:meth:`prepare` from rows of ``text``): ``first`` (tokenized for the twin, which is
    built here as a copy of the encoder and not saved), ``second`` (for the encoder), ``labels``
    (groups of ``GROUP_SIZE`` sentences: the group's first with itself, label 1, and the others
    paired through a random cyclic derangement, label 0; :func:`ct_pairs`). Output:
    ``{"ct": loss}``. The twin pools as the encoder does (the batch comes from the sentence sets'
    plan).

    Knobs (defaults: :class:`clinsent.methods.base.TrainedSettings`'): ``dropout`` and
    ``gradient_checkpointing`` (either keeps the twin in training mode: the original CT trains
    without dropout).

    Example: ``loss = CTLoss(encoder, dropout=False)``, then ``loss(loss.prepare(rows, generator))``.
    """

    def __init__(
        self,
        encoder: Encoder,
        *,
        dropout: bool = CTSettings.dropout,
        gradient_checkpointing: bool = CTSettings.gradient_checkpointing,
    ) -> None:
        super().__init__()
        self.encoder, self.dropout, self.gradient_checkpointing = encoder, dropout, gradient_checkpointing
        self.twin_model = copy.deepcopy(encoder.model)
        self.twin = Encoder(
            self.twin_model,
            encoder.tokenizer,
            encoder.pooling,
            encoder.first_layer,
            encoder.max_length,
            encoder.device,
            precision=encoder.precision,
        )

    def train(self, mode: bool = True) -> CTLoss:
        super().train(mode)
        self.twin_model.train(mode and (self.dropout or self.gradient_checkpointing))  # see checkpoint_layers
        return self

    def prepare(self, rows: pd.DataFrame, generator: torch.Generator) -> dict[str, Any]:
        rng = np.random.default_rng(int(torch.randint(2**62, (1,), generator=generator)))
        first, second, labels = ct_pairs(rows["text"].tolist(), rng)
        return {
            "n": len(labels),
            "first": self.twin.tokenize(first),
            "second": self.encoder.tokenize(second),
            "labels": labels,
        }

    def chunk(self, batch: dict[str, Any], start: int, stop: int) -> dict[str, Any]:
        """Pairs ``start..stop-1`` (the groups were drawn from the whole batch)."""
        part = slice(start, stop)
        return {
            "n": stop - start,
            "first": take(batch["first"], part),
            "second": take(batch["second"], part),
            "labels": batch["labels"][part],
        }

    def embed(self, batch: dict[str, Any], fixed: bool = True) -> Embedded:
        """Each pair's first text through the twin (``e1``), its second through the kept model (``e2``)."""
        return Embedded({"e1": self.twin.embed_batch(batch["first"]), "e2": self.encoder.embed_batch(batch["second"])})

    def score(self, vectors: Mapping[str, torch.Tensor], batch: dict[str, Any]) -> dict[str, torch.Tensor]:
        return {"ct": ct_loss(vectors["e1"], vectors["e2"], batch["labels"])}
