"""MED-SE objective (Hwang, Yoo, Choi 2022, arXiv 2212.04734, eqs. 1-3).

L = L_sen + lambda * L_ent, where L_sen is unsupervised SimCSE over the batch (eq. 1) and
L_ent (eq. 2) is InfoNCE between the entity embeddings h_ent (entity encoder over the entity
tokens of the same forward pass) and the definition embeddings h_def (separate definition
encoder) of the sentences of the batch that carry a chosen entity, positives on the diagonal.

The loss module of :mod:`clinsent.methods.medse` (which names the knobs): the entity span
mapped to tokens through the tokenizer's offset mapping, Table 5's perturbation controls
(``random_tokens``: as many random token positions of the same sentence, never [CLS], [SEP] or
padding; ``shuffle_pairs``: definitions paired by a random derangement, so no entity meets its
own definition; ``sentence_pooling``: every real token pooled instead of the span) and the
loss (:class:`MedSELoss`, SimCSE's extended by the entity and definition encoders).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import pandas as pd
import torch

from clinsent.losses.base import Embedded, take
from clinsent.losses.contrastive import info_nce
from clinsent.losses.simcse import SimCSELoss
from clinsent.methods.medse import MedSESettings
from clinsent.models.base import load_transformer
from clinsent.models.encoder import Encoder
from clinsent.models.entity_encoder import entity_encoder


def span_token_mask(offsets: torch.Tensor, start: int, end: int) -> torch.Tensor:
    """Bool [T]: tokens that overlap characters [start, end). Special and padding tokens,
    whose offsets are (0, 0), never do. Empty when truncation cut the entity off."""
    tok_start, tok_end = offsets[..., 0], offsets[..., 1]
    return (tok_end > tok_start) & (tok_end > start) & (tok_start < end)


def random_token_mask(
    span_mask: torch.Tensor, attention_mask: torch.Tensor, generator: torch.Generator
) -> torch.Tensor:
    """Bool [n, T] with, per row, as many random positions among tokens 1..L-2 as the span has."""
    out = torch.zeros_like(span_mask, dtype=torch.bool)
    for i in range(span_mask.size(0)):
        length = int(attention_mask[i].sum())
        inner = torch.arange(1, max(length - 1, 1))
        k = min(int(span_mask[i].sum()), len(inner))
        if k == 0:
            continue
        out[i, inner[torch.randperm(len(inner), generator=generator)[:k]]] = True
    return out


def derangement(n: int, generator: torch.Generator) -> torch.Tensor:
    """A random permutation of 0..n-1 with no fixed point (identity for n < 2)."""
    if n < 2:
        return torch.arange(n)
    order = torch.randperm(n, generator=generator)
    target = torch.empty(n, dtype=torch.long)
    target[order] = torch.roll(order, -1)
    return target


def entity_loss(h_ent: torch.Tensor, h_def: torch.Tensor, temperature: float) -> torch.Tensor:
    """Eq. 2 (mean over S^k); zero when fewer than one entity is in the batch."""
    if len(h_ent) == 0:
        return h_ent.new_zeros(())
    return info_nce(h_ent, h_def, temperature)


class MedSELoss(SimCSELoss):
    """MED-SE (Hwang, Yoo, Choi 2022, arXiv 2212.04734, eq. 3): L = L_sen + lambda x L_ent, with
    L_sen unsupervised SimCSE (eq. 1) and L_ent InfoNCE between each row's entity embedding (its
    span's token states through the entity encoder) and its definition's embedding (eq. 2).

    Inputs (rows of ``text``, ``start``, ``end``, ``definition``): SimCSE's ``features`` and
    ``doubled``, the entity ``span_mask`` with host-side ``span_lengths`` and ``span_width``,
    ``keep`` (rows with a definition), ``definitions`` (tokenized), ``pairing``. Outputs:
    ``{"sentence": L_sen, "entity": lambda x L_ent}``.

    Knobs (defaults: :class:`clinsent.methods.medse.MedSESettings`): ``lam`` (lambda of eq. 3),
    ``entity_encoder`` (mean, bilstm, fc, transformer or cross_attention: Table 8) with
    ``entity_layers``, ``definition_model`` (None: a copy of the base model), ``definition_pooling``
    (None: the encoder's), ``definition_trainable``, ``definition_max_length``, ``perturbation``
    (Table 5's controls), and SimCSE's (:class:`clinsent.losses.simcse.SimCSELoss`).

    Example: ``MedSELoss(encoder, lam=0.1, entity_encoder="transformer")``.
    """

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

    def prepare(self, rows: pd.DataFrame, generator: torch.Generator, offsets: bool = True) -> dict[str, Any]:
        batch = super().prepare(rows, generator, offsets=True)
        features = batch["features"]
        masks, keep, definitions = [], [], []
        for i, (start, end, definition) in enumerate(zip(rows["start"], rows["end"], rows["definition"], strict=True)):
            if not isinstance(definition, str):
                continue
            mask = span_token_mask(features["offset_mapping"][i], int(start), int(end))
            if not bool(mask.any()):
                continue  # truncated away
            if self.perturbation == "sentence_pooling":
                mask = features["attention_mask"][i].bool()
            elif self.perturbation == "random_tokens":
                mask = random_token_mask(mask[None], features["attention_mask"][i][None], generator)[0]
            masks.append(mask)
            keep.append(i)
            definitions.append(definition)
        batch["keep"] = keep
        if keep:
            batch["span_mask"] = torch.stack(masks)
            batch["span_lengths"] = batch["span_mask"].sum(dim=1)  # on the host, not in the step
            batch["span_width"] = int(batch["span_lengths"].max())
            batch["definitions"] = self.definitions.tokenize(definitions)
            if self.perturbation == "shuffle_pairs":
                batch["pairing"] = derangement(len(keep), generator)
        return batch

    def chunk(self, batch: dict[str, Any], start: int, stop: int) -> dict[str, Any]:
        """SimCSE's chunk with the entities of its sentences: their span masks (trimmed as the
        sentences are) and definitions; ``keep`` numbers the chunk's own rows."""
        out = super().chunk(batch, start, stop)
        mine = [j for j, i in enumerate(batch["keep"]) if start <= i < stop]
        out["keep"] = [batch["keep"][j] - start for j in mine]
        if mine:
            index = torch.tensor(mine)
            out["span_mask"] = batch["span_mask"][index][:, : out["features"]["input_ids"].shape[1]]
            out["span_lengths"] = out["span_mask"].sum(dim=1)
            out["span_width"] = int(out["span_lengths"].max())
            out["definitions"] = take(batch["definitions"], index)
        return out

    def embed(self, batch: dict[str, Any], fixed: bool = True) -> Embedded:
        """The two views (``z1``, ``z2``) and, for the sentences with a chosen entity, the entity
        embeddings of the same pass (``h_ent``) and their definitions' (``h_def``: without
        gradient when the definition encoder is frozen)."""
        z1, z2, hs = self.views(batch)
        out = Embedded({"z1": z1, "z2": z2})
        keep = batch["keep"]
        if not keep:
            return out
        last = hs[-1][: batch["n"]].float()
        device = last.device
        attention = batch["features"]["attention_mask"][keep].to(device, non_blocking=True)
        rows = torch.as_tensor(keep).to(device, non_blocking=True)  # a list index would be copied blocking
        out.vectors["h_ent"] = self.entity_encoder(
            last.index_select(0, rows),
            batch["span_mask"].to(device, non_blocking=True),
            attention,
            batch.get("span_width"),
            batch.get("span_lengths"),
        )
        if self.definition_trainable:
            out.vectors["h_def"] = self.definitions.embed_batch(batch["definitions"])
        elif fixed:
            with torch.no_grad():
                out.fixed["h_def"] = self.definitions.embed_batch(batch["definitions"])
        return out

    def score(self, vectors: Mapping[str, torch.Tensor], batch: dict[str, Any]) -> dict[str, torch.Tensor]:
        l_sen = info_nce(vectors["z1"], vectors["z2"], self.temperature)
        if "h_ent" not in vectors:
            return {"sentence": l_sen, "entity": l_sen.new_zeros(())}
        h_def = vectors["h_def"]
        if "pairing" in batch:
            h_def = h_def[batch["pairing"].to(h_def.device)]
        return {"sentence": l_sen, "entity": self.lam * entity_loss(vectors["h_ent"], h_def, self.temperature)}
