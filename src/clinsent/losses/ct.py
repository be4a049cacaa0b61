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

from clinsent.data.buckets import Group
from clinsent.data.positions import Alloc, StepRows, fresh
from clinsent.losses.base import Embedded, MethodLoss, gathered, own_text_encoder, take
from clinsent.methods.ct import CTSettings
from clinsent.models.encoder import Encoder

GROUP_SIZE = 8  # one positive and seven negatives


def ct_positions(
    n: int, rng: np.random.Generator, group_size: int = GROUP_SIZE
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(rows for model 1, rows for model 2, labels) over a batch of ``n`` distinct sentences.

    The batch is cut into groups of ``group_size`` sentences (a short last group is kept when it
    has at least two negatives, so a derangement exists). In a group [a, x1..xK], model 1 gets
    [a, x1..xK] and model 2 gets [a, x_s(1)..x_s(K)], where s is a random single-cycle derangement
    (each k sent to the next element of one random cycle), so no negative pair is identical and
    the two models' negative sentences differ. Every group's cycle is drawn at once (random keys
    sorted per group: a uniform random order), with no loop over rows."""
    full, tail = divmod(n, group_size)
    groups = [(np.arange(full) * group_size, group_size)] if full else []
    if tail >= 3:  # one anchor and at least two negatives
        groups.append((np.array([full * group_size]), tail))
    first, second, labels = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)], [np.zeros(0)]
    for starts, size in groups:
        order = np.argsort(rng.random((len(starts), size - 1)), axis=1)  # each group's random cycle
        nxt = np.empty_like(order)
        np.put_along_axis(nxt, order, np.roll(order, -1, axis=1), axis=1)  # k -> the next in its cycle
        first.append((starts[:, None] + np.arange(size)).ravel())
        second.append((starts[:, None] + np.concatenate([np.zeros((len(starts), 1), np.int64), 1 + nxt], 1)).ravel())
        labels.append(np.tile(np.r_[1.0, np.zeros(size - 1)], len(starts)))
    return np.concatenate(first), np.concatenate(second), np.concatenate(labels)


def ct_pairs(
    texts: list[str], rng: np.random.Generator, group_size: int = GROUP_SIZE
) -> tuple[list[str], list[str], torch.Tensor]:
    """(texts for model 1, texts for model 2, labels) from one batch of distinct sentences
    (:func:`ct_positions`)."""
    first, second, labels = ct_positions(len(texts), rng, group_size)
    return [texts[i] for i in first], [texts[i] for i in second], torch.tensor(labels, dtype=torch.float32)


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
    plan); with ``grouped`` the two models run as one grouped pass (:mod:`clinsent.models.grouped`).

    Knobs (defaults: :class:`clinsent.methods.base.TrainedSettings`'): ``dropout`` and
    ``gradient_checkpointing`` (either keeps the twin in training mode: the original CT trains
    without dropout).

    Example: ``loss = CTLoss(encoder, dropout=False)``, then ``loss(loss.prepare(rows, generator))``.
    """

    capturable = True  # no host value in its step: a captured step replays it (clinsent.train.graphs)

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

    def width_groups(self) -> dict[str, Group]:
        return {"text": Group(self.encoder.max_length)}

    def widths(self, rows: StepRows) -> dict[str, int]:
        return {"text": rows.tables["text"].width(rows.index["text"])}

    def rows_of(self, frame: pd.DataFrame) -> StepRows:
        encoder = own_text_encoder(self, "_text_encoder", self.encoder.tokenizer, self.encoder.max_length)
        table, _ = encoder.encode(frame["text"].astype(str).tolist())
        return StepRows(len(frame), {"text": table}, {"text": np.arange(len(frame))}, frame=lambda: frame)

    def assemble(self, rows: StepRows, generator: torch.Generator, alloc: Alloc = fresh) -> dict[str, Any]:
        """The twin's and the kept model's sentences of each pair (:func:`ct_positions`), gathered
        to one width, and the labels."""
        rng = np.random.default_rng(int(torch.randint(2**62, (1,), generator=generator)))
        first, second, labels = ct_positions(rows.n, rng)
        table, index = rows.tables["text"], rows.index["text"]
        width = self.width("text", table.width(index))
        return {
            "n": len(labels),
            "first": gathered([(table, index[first])], width, alloc, "first."),
            "second": gathered([(table, index[second])], width, alloc, "second."),
            "labels": torch.from_numpy(labels.astype(np.float32)),
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

    def use_grouped(self, on: bool) -> str | None:
        """The twin and the kept model run as one grouped pass (:mod:`clinsent.models.grouped`),
        where the two models allow it; the reason where not."""
        why = self.twin.why_not_beside(self.encoder) if on else None
        self.grouped = on and why is None
        return why

    def embed(self, batch: dict[str, Any], fixed: bool = True) -> Embedded:
        """Each pair's first text through the twin (``e1``), its second through the kept model
        (``e2``): one after the other, or as one grouped pass (``grouped``)."""
        first, second = batch["first"], batch["second"]
        if self.grouped:
            twin, kept = self.twin.hidden_states_beside(first, self.encoder, second)
            return Embedded({"e1": self.twin.pooled(twin, first), "e2": self.encoder.pooled(kept, second)})
        return Embedded({"e1": self.twin.embed_batch(first), "e2": self.encoder.embed_batch(second)})

    def score(self, vectors: Mapping[str, torch.Tensor], batch: dict[str, Any]) -> dict[str, torch.Tensor]:
        return {"ct": ct_loss(vectors["e1"], vectors["e2"], batch["labels"])}
