"""MED-SE objective (Hwang, Yoo, Choi 2022, arXiv 2212.04734, eqs. 1-3).

L = L_sen + lambda * L_ent, where L_sen is unsupervised SimCSE over the batch (eq. 1) and
L_ent (eq. 2) is InfoNCE between the entity embeddings h_ent (entity encoder over the entity
tokens of the same forward pass) and the definition embeddings h_def (separate definition
encoder) of the sentences of the batch that carry a chosen entity, positives on the diagonal.

The loss module of :mod:`clinsent.methods.medse` (which names the knobs): the entity span
mapped to tokens through the tokenizer's offset mapping (once, by the ``tokens`` rule:
:func:`clinsent.data.encode.entity_spans`), Table 5's perturbation controls (``random_tokens``:
as many random token positions of the same sentence, never [CLS], [SEP] or padding;
``shuffle_pairs``: definitions paired by a random derangement, so no entity meets its own
definition; ``sentence_pooling``: every real token pooled instead of the span) and the loss
(:class:`MedSELoss`, SimCSE's extended by the entity and definition encoders).

A step's work is its FLOPs': the spans and the definitions' tokens come from the token tables (no
tokenizer call, no loop over rows; each term's definition tokenized once), each entity's token
positions are made on the host with the batch, and the entities the loss keeps (a definition,
a span within the length) are a mask over the batch's rows: with static shapes (a captured
step) every row has an entity slot, the others a placeholder the mask leaves out of eq. 2, so
a batch's shapes do not depend on how many entities it keeps. A frozen definition encoder
(``definition_trainable: false``) embeds each term's definition once; a trained one runs with the
sentence encoder as one grouped pass (``grouped``: :mod:`clinsent.models.grouped`, each layer's
products one over both encoders' rows), or else is queued first, on a second CUDA stream, so its
forward and backward run beside the sentence encoder's (:mod:`clinsent.gpu.streams`; on the CPU
it runs after the sentence encoder, so the random draws are those of one stream).
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
from clinsent.data.encode import TextEncoder, entity_spans
from clinsent.data.positions import Alloc, StepRows, fresh
from clinsent.data.tokens import NO_SPAN
from clinsent.gpu.streams import Branch, joined
from clinsent.losses.base import Embedded, gathered, own_text_encoder, take
from clinsent.losses.contrastive import cosine_logits, info_nce
from clinsent.losses.simcse import SimCSELoss
from clinsent.methods.medse import MedSESettings
from clinsent.models.base import load_transformer
from clinsent.models.encoder import Encoder
from clinsent.models.entity_encoder import entity_encoder


def span_token_mask(offsets: torch.Tensor, start: int, end: int) -> torch.Tensor:
    """Bool [T]: tokens that overlap characters [start, end). Special and padding tokens,
    whose offsets are (0, 0), never do. Empty when truncation cut the entity off (the rule
    :func:`clinsent.data.encode.entity_spans` applies, kept as the test's reference)."""
    tok_start, tok_end = offsets[..., 0], offsets[..., 1]
    return (tok_end > tok_start) & (tok_end > start) & (tok_start < end)


def random_token_mask(
    counts: np.ndarray, lengths: np.ndarray, width: int, generator: torch.Generator, cap: int
) -> np.ndarray:
    """Bool [n, width] with, per row, ``counts`` random positions among its tokens 1..L-2 (never
    [CLS], [SEP] or padding; fewer where the row has fewer), drawn over ``cap`` columns so the
    draws do not depend on the padding."""
    keys = torch.rand((len(counts), max(cap, width)), generator=generator)[:, :width].numpy()
    positions = np.arange(width)
    inner = (positions >= 1) & (positions < np.maximum(lengths - 1, 1)[:, None])
    keys = np.where(inner, keys, 2.0)
    rank = np.argsort(np.argsort(keys, axis=1, kind="stable"), axis=1, kind="stable")
    k = np.minimum(counts, inner.sum(axis=1))
    return rank < k[:, None]


def derangement(n: int, generator: torch.Generator) -> torch.Tensor:
    """A random permutation of 0..n-1 with no fixed point (identity for n < 2)."""
    if n < 2:
        return torch.arange(n)
    order = torch.randperm(n, generator=generator)
    target = torch.empty(n, dtype=torch.long)
    target[order] = torch.roll(order, -1)
    return target


def entity_loss(
    h_ent: torch.Tensor, h_def: torch.Tensor, temperature: float, keep: torch.Tensor | None = None
) -> torch.Tensor:
    """Eq. 2 over the kept entities (``keep`` [n] bool; all when None): InfoNCE of each kept
    entity against every kept definition, the mean over them; zero when none is kept. A row left
    out is out of every denominator too (its logit set to the float minimum, whose exp is 0), so
    the loss equals InfoNCE over the kept rows alone."""
    if len(h_ent) == 0:
        return h_ent.new_zeros(())
    if keep is None:
        return info_nce(h_ent, h_def, temperature)
    logits = cosine_logits(h_ent.float(), h_def.float(), temperature)
    logits = logits.masked_fill(~keep.unsqueeze(0), torch.finfo(logits.dtype).min)
    each = F.cross_entropy(logits, torch.arange(len(logits), device=logits.device), reduction="none")
    weight = keep.to(each.dtype)
    return (each * weight).sum() / weight.sum().clamp(min=1.0)


class MedSELoss(SimCSELoss):
    """MED-SE (Hwang, Yoo, Choi 2022, arXiv 2212.04734, eq. 3): L = L_sen + lambda x L_ent, with
    L_sen unsupervised SimCSE (eq. 1) and L_ent InfoNCE between each row's entity embedding (its
    span's token states through the entity encoder) and its definition's embedding (eq. 2).

    Inputs (rows of ``text``, ``start``, ``end``, ``definition``; or their token positions):
    SimCSE's ``features`` and ``doubled``; for the entity slots: ``entity_rows`` (their sentences),
    ``entity_keep`` (the slots eq. 2 counts), ``span_index``, ``span_valid`` and host-side
    ``span_lengths`` (each slot's token positions), ``definitions`` (tokenized) or
    ``definition_rows`` (rows of the frozen encoder's embedded definitions), ``pairing``.
    Outputs: ``{"sentence": L_sen, "entity": lambda x L_ent}``.

    Knobs (defaults: :class:`clinsent.methods.medse.MedSESettings`): ``lam`` (lambda of eq. 3),
    ``entity_encoder`` (mean, bilstm, fc, transformer or cross_attention: Table 8) with
    ``entity_layers``, ``definition_model`` (None: a copy of the base model), ``definition_pooling``
    (None: the encoder's), ``definition_trainable``, ``definition_max_length``, ``perturbation``
    (Table 5's controls), and SimCSE's (:class:`clinsent.losses.simcse.SimCSELoss`).

    Example: ``MedSELoss(encoder, lam=0.1, entity_encoder="transformer")``.
    """

    @property
    def capturable(self) -> bool:  # type: ignore[override]
        return not self.entity_encoder.host_lengths  # the bilstm packs its spans by lengths on the host

    def __init__(
        self,
        encoder: Encoder,
        *,
        lam: float = MedSESettings.lam,
        entity_encoder: str = MedSESettings.entity_encoder,
        entity_layers: int = MedSESettings.entity_layers,
        perturbation: str = MedSESettings.perturbation,
        definition_model: str | None = MedSESettings.definition_model,
        definition_pooling: str | None = MedSESettings.definition_pooling,
        definition_trainable: bool = MedSESettings.definition_trainable,
        definition_max_length: int = MedSESettings.definition_max_length,
        **simcse: Any,
    ) -> None:
        # plain values, set before nn.Module's __init__: SimCSE's __init__ builds these modules
        # (build_extras) before its MLP head, so the head's initialisation draws what it drew before
        self.lam, self.entity_encoder_kind, self.entity_layers = lam, entity_encoder, entity_layers
        self.perturbation, self.definition_model_spec = perturbation, definition_model
        self.definition_pooling, self.definition_trainable = definition_pooling, definition_trainable
        self.definition_max_length = definition_max_length
        self._frozen: tuple[Any, torch.Tensor] | None = None  # (table, its embedded definitions)
        super().__init__(encoder, **simcse)

    def build_extras(self, encoder: Encoder) -> None:
        dim = encoder.model.config.hidden_size
        self.entity_encoder = entity_encoder(self.entity_encoder_kind, dim, layers=self.entity_layers)
        if self.definition_model_spec:
            loaded = load_transformer(self.definition_model_spec, self.definition_max_length)
            self.definition_model, tokenizer = loaded.model.to(encoder.device), loaded.tokenizer
        else:
            self.definition_model, tokenizer = copy.deepcopy(encoder.model), encoder.tokenizer
        if self.definition_model.config.hidden_size != dim:
            raise ValueError(
                f"definition model width {self.definition_model.config.hidden_size} != encoder width {dim}"
            )
        self.definition_model.requires_grad_(self.definition_trainable)
        self.definitions = Encoder(
            self.definition_model,
            tokenizer,
            self.definition_pooling or encoder.pooling,
            encoder.first_layer,
            self.definition_max_length,
            encoder.device,
            precision=encoder.precision,
        )

    def train(self, mode: bool = True) -> MedSELoss:
        super().train(mode)
        if not self.definition_trainable:
            self.definition_model.eval()  # a frozen encoder: no dropout either
        return self

    def width_groups(self) -> dict[str, Group]:
        # an entity's span: one width for the whole run (the longest span; a few tokens)
        return {
            **super().width_groups(),
            "definition": Group(self.definition_max_length),
            "span": Group(self.encoder.max_length, single=True),
        }

    def widths(self, rows: StepRows) -> dict[str, int]:
        out = super().widths(rows)
        keep = self._kept(rows)
        defs = rows.index["definition"][keep]
        out["definition"] = rows.tables["definition"].width(defs)
        spans = rows.values["span_end"][keep] - rows.values["span_start"][keep]
        out["span"] = out["text"] if self.perturbation == "sentence_pooling" else int(spans.max(initial=1))
        return out

    def rows_of(self, frame: pd.DataFrame) -> StepRows:
        """The frame's sentences and their chosen entities' definitions tokenized, each entity's
        characters mapped to its tokens (:func:`clinsent.data.encode.entity_spans`)."""
        texts = frame["text"].astype(str).tolist()
        table, chars = self.text_encoder().encode(texts, offsets=True)
        assert chars is not None
        n = len(frame)
        has = np.array([isinstance(d, str) for d in frame["definition"]], dtype=bool)
        rows = np.nonzero(has)[0]
        spans = entity_spans(
            table, chars, rows, np.zeros(len(rows)), frame["start"].to_numpy()[has], frame["end"].to_numpy()[has]
        )
        start, end = np.full(n, NO_SPAN, np.int64), np.full(n, NO_SPAN, np.int64)
        start[rows], end[rows] = spans.start, spans.end
        definitions, _ = self.definition_encoder().encode(frame["definition"][has].astype(str).tolist())
        def_rows = np.full(n, -1, np.int64)
        def_rows[rows] = np.arange(len(rows))
        return StepRows(
            n,
            {"text": table, "definition": definitions},
            {"text": np.arange(n), "definition": def_rows},
            {"span_start": start, "span_end": end},
            frame=lambda: frame,
        )

    def definition_encoder(self) -> TextEncoder:
        return own_text_encoder(
            self, "_definition_text_encoder", self.definitions.tokenizer, self.definition_max_length
        )

    @staticmethod
    def _kept(rows: StepRows) -> np.ndarray:
        """The rows whose chosen entity has a definition and a span within the length."""
        return (rows.index["definition"] >= 0) & (rows.values["span_end"] > rows.values["span_start"])

    def assemble(self, rows: StepRows, generator: torch.Generator, alloc: Alloc = fresh) -> dict[str, Any]:
        """SimCSE's views, then each entity slot: its sentence, its token positions (the span, or
        Table 5's controls), its definition's tokens (or, frozen, its row of the embedded
        definitions) and the pairing; all on the host, no loop over rows."""
        batch = super().assemble(rows, generator, alloc)
        keep = self._kept(rows)
        if self.static_shapes and keep.any():  # a slot for every row
            slots, kept = np.arange(rows.n), keep
        else:
            slots = np.nonzero(keep)[0]
            kept = keep[slots]
        m = len(slots)
        batch["entity_rows"] = torch.from_numpy(slots)
        batch["entity_keep"] = torch.from_numpy(kept)
        if m == 0:  # no entity to learn from in this batch: eq. 2 is 0
            return batch
        order, valid, counts = self._span_positions(rows, batch["features"]["attention_mask"], generator, slots, kept)
        batch["span_index"] = torch.from_numpy(order)
        batch["span_valid"] = torch.from_numpy(valid)
        batch["span_lengths"] = torch.from_numpy(counts)  # on the host (the bilstm packs by them)
        table, defs = rows.tables["definition"], rows.index["definition"][slots]
        if not kept.all():  # a placeholder's: a real one (left out by the mask)
            defs = np.where(kept, defs, defs[kept][0])
        if self.definition_trainable:
            batch["definitions"] = gathered(
                [(table, defs)], self.width("definition", table.width(defs)), alloc, "def."
            )
        else:
            batch["definition_rows"] = torch.from_numpy(defs)
            batch["definition_table"] = table  # the frozen encoder embeds each of its rows once
        if self.perturbation == "shuffle_pairs":
            pairing = np.arange(m)
            pairing[np.nonzero(kept)[0]] = np.nonzero(kept)[0][derangement(int(kept.sum()), generator).numpy()]
            batch["pairing"] = torch.from_numpy(pairing)
        return batch

    def _span_positions(
        self, rows: StepRows, attention: torch.Tensor, generator: torch.Generator, slots: np.ndarray, kept: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(int64 [slots, span width]: each slot's token positions first, in order, then 0; bool
        [slots, span width]: which are its positions; int64 [slots]: how many). A placeholder
        slot (no kept entity) has one position, 0, which the mask leaves out of eq. 2. The
        entity's own span is contiguous: its positions are counted from its start (few small
        arrays, each a short hold of the interpreter lock); Table 5's controls are sorted out of
        their masks over the sentence's width."""
        if self.perturbation in ("random_tokens", "sentence_pooling"):
            mask = self._span_mask(rows, attention.numpy(), generator)[slots]
            mask[~kept, 0] = True
            counts = mask.sum(axis=1).astype(np.int64)
            width = self.width("span", int(counts.max()))
            order = np.argsort(~mask, axis=1, kind="stable")[:, :width]  # each slot's positions first
            valid = np.arange(width) < counts[:, None]
            if order.shape[1] < width:  # the run's span width beyond this batch's sentences: masked columns
                order = np.pad(order, ((0, 0), (0, width - order.shape[1])))
            return np.where(valid, order, 0).astype(np.int64), valid, counts
        start = np.where(kept, rows.values["span_start"][slots], 0).astype(np.int64)
        counts = np.where(kept, rows.values["span_end"][slots] - start, 1).astype(np.int64)
        positions = np.arange(self.width("span", int(counts.max())))
        valid = positions < counts[:, None]
        return np.where(valid, start[:, None] + positions, 0), valid, counts

    def _span_mask(self, rows: StepRows, attention: np.ndarray, generator: torch.Generator) -> np.ndarray:
        """Bool [n, width]: each row's entity tokens, or Table 5's control of them."""
        n, width = attention.shape
        if self.perturbation == "sentence_pooling":
            return attention.astype(bool)
        start, end = rows.values["span_start"], rows.values["span_end"]
        positions = np.arange(width)
        span = (positions >= start[:, None]) & (positions < end[:, None])
        if self.perturbation == "random_tokens":
            counts = np.maximum(end - start, 0)
            return random_token_mask(counts, attention.sum(axis=1), width, generator, self.encoder.max_length)
        return span

    def chunk(self, batch: dict[str, Any], start: int, stop: int) -> dict[str, Any]:
        """SimCSE's chunk with the entity slots of its sentences (their positions, trimmed as the
        sentences are; their definitions); ``entity_rows`` number the chunk's own rows."""
        out = super().chunk(batch, start, stop)
        rows = batch["entity_rows"]
        mine = (rows >= start) & (rows < stop)  # host tensors
        out["entity_rows"] = rows[mine] - start
        out["entity_keep"] = batch["entity_keep"][mine]
        if not bool(mine.any()):
            return out
        width = out["features"]["input_ids"].shape[1]
        out["span_index"] = batch["span_index"][mine].clamp(max=width - 1)
        for key in ("span_valid", "span_lengths", "definition_rows"):
            if key in batch:
                out[key] = batch[key][mine]
        if "definition_table" in batch:
            out["definition_table"] = batch["definition_table"]
        if "definitions" in batch:
            out["definitions"] = take(batch["definitions"], mine.nonzero().squeeze(1))
        return out

    def use_grouped(self, on: bool) -> str | None:
        """A trained definition encoder runs with the sentence encoder as one grouped pass
        (:mod:`clinsent.models.grouped`), where the two models allow it; the reason where not."""
        self.grouped = False
        if not on:
            return None
        if not self.definition_trainable:
            return "the definition encoder is frozen: each definition is embedded once, outside the step"
        why = self.encoder.why_not_beside(self.definitions)
        self.grouped = why is None
        return why

    def embed(self, batch: dict[str, Any], fixed: bool = True) -> Embedded:
        """The two views (``z1``, ``z2``) and, for the entity slots, the entity embeddings of the
        same pass (``h_ent``) and their definitions' (``h_def``: without gradient when the
        definition encoder is frozen). A trained definition encoder runs with the sentence encoder
        as one grouped pass (``grouped``), or else is queued first on its own stream where the
        device has streams (beside the sentence encoder's), or else runs after the views."""
        slots = len(batch["entity_rows"])
        trained = bool(slots) and self.definition_trainable
        branch = Branch(self.encoder.device) if trained and not self.grouped else None
        h_def = None
        if trained and self.grouped:
            with self.augmented(batch) as extra:
                hs, states = self.encoder.hidden_states_beside(
                    batch["doubled"], self.definitions, batch["definitions"], **extra
                )
            z1, z2 = self.pooled_views(batch, hs)
            h_def = self.definitions.pooled(states, batch["definitions"])
        else:
            if branch is not None and branch.parallel:
                with branch.queued():
                    h_def = self.definitions.embed_batch(batch["definitions"])
            z1, z2, hs = self.views(batch)
        out = Embedded({"z1": z1, "z2": z2})
        if not slots:
            return out
        device = hs[-1].device
        rows = batch["entity_rows"].to(device, non_blocking=True)
        last = hs[-1][: batch["n"]].float().index_select(0, rows)
        attention = batch["features"]["attention_mask"].to(device, non_blocking=True).index_select(0, rows)
        if trained:
            if h_def is None:  # no second stream: here, after the views, as one stream draws
                h_def = self.definitions.embed_batch(batch["definitions"])
            out.vectors["h_def"] = h_def
        out.vectors["h_ent"] = self.entity_encoder.pooled(
            last,
            batch["span_index"].to(device, non_blocking=True),
            batch["span_valid"].to(device, non_blocking=True),
            attention,
            batch["span_lengths"],
        )
        if branch is not None and branch.parallel and h_def is not None:
            branch.join()  # the loss reads h_def
            joined(h_def, device)
        if not self.definition_trainable and fixed:
            out.fixed["h_def"] = self._frozen_definitions(batch)
        return out

    def _frozen_definitions(self, batch: dict[str, Any]) -> torch.Tensor:
        """The frozen encoder's definition embeddings of the batch's slots: each term's definition
        embedded once (a table's every row, on its first use), then looked up."""
        with torch.no_grad():
            table = batch["definition_table"]
            if self._frozen is None or self._frozen[0] is not table:
                self._frozen = (table, self._embed_table(table))
            rows = batch["definition_rows"].to(self._frozen[1].device, non_blocking=True)
            return self._frozen[1].index_select(0, rows)

    def _embed_table(self, table: Any, size: int = 256) -> torch.Tensor:
        """Every row of a definitions table through the frozen encoder, ``size`` rows at a time."""
        parts = []
        for a in range(0, len(table), size):
            rows = np.arange(a, min(a + size, len(table)))
            features = gathered([(table, rows)], table.width(rows), fresh)
            parts.append(self.definitions.embed_batch(features).float())
        return torch.cat(parts)

    def score(self, vectors: Mapping[str, torch.Tensor], batch: dict[str, Any]) -> dict[str, torch.Tensor]:
        l_sen = info_nce(vectors["z1"], vectors["z2"], self.temperature)
        if "h_ent" not in vectors:
            return {"sentence": l_sen, "entity": l_sen.new_zeros(())}
        h_def = vectors["h_def"]
        if "pairing" in batch:
            h_def = h_def[batch["pairing"].to(h_def.device, non_blocking=True)]
        keep = batch.get("entity_keep")  # every entity where no mask is given
        keep = keep.to(h_def.device, non_blocking=True) if keep is not None else None
        return {"sentence": l_sen, "entity": self.lam * entity_loss(vectors["h_ent"], h_def, self.temperature, keep)}
