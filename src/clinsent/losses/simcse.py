"""The loss module of unsupervised SimCSE (:mod:`clinsent.methods.simcse`: the paper, the
equation and the knobs): both views of a batch in one forward pass, InfoNCE over cosine / tau
with the positives on the diagonal, the MLP head of ``pooling: cls`` in training only. MED-SE's
and MixCSE's losses extend it. ``embed`` gives the two views' vectors (``z1``, ``z2``),
``score`` the InfoNCE over them; a chunk is a range of sentences with both of its views.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import torch

from clinsent.augment.consert import EmbeddingCutoff, cutoff_rows, shuffled_position_ids
from clinsent.augment.text import TEXT_AUGMENTATIONS, augment
from clinsent.data.buckets import Group
from clinsent.data.encode import TextEncoder
from clinsent.data.positions import Alloc, StepRows, fresh
from clinsent.losses.base import Embedded, MethodLoss, block_rows, gathered, own_text_encoder, take
from clinsent.losses.contrastive import info_nce
from clinsent.methods.simcse import SimCSESettings
from clinsent.models.encoder import Encoder
from clinsent.models.pooling import pool


class SimCSELoss(MethodLoss):
    """Unsupervised SimCSE (Gao, Yao, Chen 2021, EMNLP, eq. 1): each sentence encoded twice in one
    pass (2N rows; the views differ by their dropout masks, or by ConSERT's token shuffle or
    cutoff, or the second view is an augmented text), InfoNCE over cosine / tau with the positives
    on the diagonal.

    Inputs (:meth:`assemble` from the rows' token positions, or :meth:`prepare` from rows of
    ``text``): ``features`` (the rows' tokens), ``doubled`` (both views), ``n``, and
    ``position_ids`` (token shuffle) or ``cutoff`` (token cutoff) where the augmentation asks.
    Output: ``{"sentence": info_nce(z1, z2, tau)}``. The pooling is the encoder's (``cls``: an MLP
    head in training only).

    Knobs (the defaults are :class:`clinsent.methods.simcse.SimCSESettings`'): ``temperature``
    (tau), ``augmentation`` (dropout, ConSERT's ``token_cutoff`` / ``token_shuffle``, or a text
    augmentation of the second view), ``augmentation_rate``, ``augmentation_unit`` (words or
    characters), ``stopwords`` (what ``stopword_insertion`` inserts).

    Example: ``loss = SimCSELoss(encoder, temperature=0.05)``; ``loss(loss.prepare(rows,
    generator))`` returns the part; the trainer sums the parts and steps. The method builds it
    from its settings (:meth:`clinsent.methods.base.Method.build_loss`).
    """

    capturable = True  # no host value in its step: a captured step replays it (clinsent.train.graphs)

    def __init__(
        self,
        encoder: Encoder,
        *,
        temperature: float = SimCSESettings.temperature,
        augmentation: str = SimCSESettings.augmentation,
        augmentation_rate: float = SimCSESettings.augmentation_rate,
        augmentation_unit: str = SimCSESettings.augmentation_unit,
        stopwords: tuple[str, ...] = SimCSESettings.stopwords,
    ) -> None:
        super().__init__()
        self.encoder, self.temperature = encoder, temperature
        self.augmentation, self.augmentation_rate = augmentation, augmentation_rate
        self.augmentation_unit, self.stopwords = augmentation_unit, tuple(stopwords)
        self.cutoff = EmbeddingCutoff(encoder.model) if augmentation == "token_cutoff" else None
        self.build_extras(encoder)
        dim = encoder.model.config.hidden_size
        self.mlp = encoder.training_head(dim)

    def build_extras(self, encoder: Encoder) -> None:
        """Modules built before the MLP head (MED-SE's entity and definition encoders)."""

    def second_view(self, texts: list[str], generator: torch.Generator) -> list[str]:
        """The augmented texts of the second view (text augmentations only)."""
        rng = np.random.default_rng(int(torch.randint(2**62, (1,), generator=generator)))
        mask = self.encoder.tokenizer.mask_token or "[MASK]"
        how = (self.augmentation, self.augmentation_rate)
        return [augment(t, *how, rng, mask, self.augmentation_unit, self.stopwords) for t in texts]

    def width_groups(self) -> dict[str, Group]:
        return {"text": Group(self.encoder.max_length)}  # both views: one width

    def widths(self, rows: StepRows) -> dict[str, int]:
        return {"text": rows.tables["text"].width(rows.index["text"])}

    def text_encoder(self) -> TextEncoder:
        """The encoder's tokenizer as a :class:`TextEncoder` (made once, on first use: the frames
        of a job without token files, a text augmentation's second view)."""
        return own_text_encoder(self, "_text_encoder", self.encoder.tokenizer, self.encoder.max_length)

    def rows_of(self, frame: pd.DataFrame) -> StepRows:
        table, _ = self.text_encoder().encode(frame["text"].astype(str).tolist())
        return StepRows(len(frame), {"text": table}, {"text": np.arange(len(frame))}, frame=lambda: frame)

    def assemble(self, rows: StepRows, generator: torch.Generator, alloc: Alloc = fresh) -> dict[str, Any]:
        """Both views of the step's sentences in one padded batch (``doubled``; the first view's
        rows are ``features``), gathered from the token table: the same rows twice, or (a text
        augmentation) the sentences then their augmented texts, encoded here. Token shuffle and
        cutoff draw over the length cap, so the draws do not depend on the padding."""
        n, table, index = rows.n, rows.tables["text"], rows.index["text"]
        if self.augmentation in TEXT_AUGMENTATIONS:
            second, _ = self.text_encoder().encode(
                self.second_view(rows.rows()["text"].astype(str).tolist(), generator)
            )
            own = np.arange(n)
            width = self.width("text", max(table.width(index), second.width(own)))
            doubled = gathered([(table, index), (second, own)], width, alloc)
        else:  # the same rows twice
            doubled = gathered([(table, index)], self.width("text", table.width(index)), alloc, repeat=2)
        batch: dict[str, Any] = {"n": n, "features": {k: v[:n] for k, v in doubled.items()}, "doubled": doubled}
        mask, cap = doubled["attention_mask"], self.encoder.max_length
        if self.augmentation == "token_shuffle":
            batch["position_ids"] = shuffled_position_ids(mask, generator, cap)
        elif self.augmentation == "token_cutoff":
            batch["cutoff"] = cutoff_rows(mask, self.augmentation_rate, generator, cap)
        return batch

    def views(self, batch: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor, tuple[torch.Tensor, ...]]:
        """(z1, z2, hidden states of both views) for one prepared batch."""
        with self.augmented(batch) as extra:
            hs = self.encoder.hidden_states(batch["doubled"], **extra)
        z1, z2 = self.pooled_views(batch, hs)
        return z1, z2, hs

    @contextlib.contextmanager
    def augmented(self, batch: dict[str, Any]) -> Iterator[dict[str, torch.Tensor]]:
        """Around the views' forward, their augmentation: yields the forward's extra inputs (the
        shuffled position ids), or applies ConSERT's token cutoff to the embeddings inside."""
        if "position_ids" in batch:
            yield {"position_ids": batch["position_ids"]}
        elif "cutoff" in batch and self.cutoff is not None:
            with self.cutoff.applied(batch["cutoff"]):
                yield {}
        else:
            yield {}

    def pooled_views(self, batch: dict[str, Any], hs: Sequence[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        """(z1, z2) from the states of both views (the doubled batch's)."""
        enc, doubled, n = self.encoder, batch["doubled"], batch["n"]
        emb = pool(hs, doubled["attention_mask"].to(enc.device, non_blocking=True), enc.pooling, enc.first_layer)
        if self.mlp is not None:
            emb = self.mlp(emb)
        return emb[:n], emb[n:]

    def chunk(self, batch: dict[str, Any], start: int, stop: int) -> dict[str, Any]:
        """Sentences ``start..stop-1``: their rows of the first view and of the doubled batch
        (both views), the augmentation draws with them, padding trimmed to the chunk's longest."""
        both = block_rows(batch["n"], 2, start, stop)
        doubled = take(batch["doubled"], both)
        width = doubled["input_ids"].shape[1]  # the first view's rows are among them: one width for all
        out: dict[str, Any] = {
            "n": stop - start,
            "doubled": doubled,
            "features": {k: v[start:stop, :width] for k, v in batch["features"].items()},
        }
        for key in ("position_ids", "cutoff"):
            if key in batch:
                out[key] = batch[key][both][:, :width]
        return out

    def embed(self, batch: dict[str, Any], fixed: bool = True) -> Embedded:
        z1, z2, _ = self.views(batch)
        return Embedded({"z1": z1, "z2": z2})

    def score(self, vectors: Mapping[str, torch.Tensor], batch: dict[str, Any]) -> dict[str, torch.Tensor]:
        return {"sentence": info_nce(vectors["z1"], vectors["z2"], self.temperature)}
