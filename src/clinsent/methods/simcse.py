"""Unsupervised SimCSE (Gao, Yao, Chen 2021, EMNLP, eq. 1; MED-SE eq. 1), with ConSERT's
token augmentations (Yan et al. 2021, ACL, section 3.2) or the biomedical augmentation paper's
text augmentations (section 4.2: random crop, word deletion, random swap, stop-word and
punctuation insertion; :mod:`clinsent.augment.text`) as the alternative views.

Each sentence of the batch goes through the encoder twice in one pass (2N rows), so the two
views differ by their dropout masks (with ``augmentation``, also by token shuffle or token
cutoff, or the second view is an augmented text; dropout stays on unless ``dropout: false``);
the loss is InfoNCE over cosine / tau, one direction, positives on the diagonal, no
intra-view negatives (SimCSE's ``cl_forward``; :func:`clinsent.losses.contrastive.info_nce`).
With ``pooling: cls`` the pooled [CLS] passes a fresh MLP head (Linear + tanh) in training
only. Why not sentence-transformers' MultipleNegativesRankingLoss: it cannot take the
first-last pooling's layer states, the per-row augmentation draws or the MLP used in training
only, and MED-SE needs the token states of the same forward pass.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd
import torch

from clinsent.augment.consert import cutoff_rows, shuffled_position_ids, zero_rows_after_embeddings
from clinsent.augment.text import STOPWORDS, TEXT_AUGMENTATIONS, augment
from clinsent.errors import InputError
from clinsent.losses.contrastive import info_nce
from clinsent.methods.base import METHODS, Method, MethodLoss, SentencePlanSettings, TrainedSettings
from clinsent.models.encoder import Encoder
from clinsent.models.pooling import MlpHead, pool, pooling_spec
from clinsent.settings import knob


@dataclass(frozen=True)
class SimCSESettings(TrainedSettings, SentencePlanSettings):
    temperature: float = knob(0.05, "tau of InfoNCE", exclusiveMinimum=0)
    augmentation: Literal["dropout", "token_cutoff", "token_shuffle", "random_crop", "word_deletion", "random_swap",
                          "stopword_insertion", "punctuation_insertion"] = knob(
        "dropout", "what makes the two views differ: dropout, ConSERT's token_cutoff / token_shuffle, or a text "
                   "augmentation of the second view")
    augmentation_rate: float = knob(0.15, "token_cutoff: share of tokens zeroed; random_crop: share of units masked; "
                                          "word_deletion: probability of dropping a unit; stopword_insertion: stop "
                                          "words per unit; punctuation_insertion: at most this share of units get a "
                                          "mark (AEDA: 0.3)", minimum=0, exclusiveMaximum=1)
    augmentation_unit: Literal["words", "characters"] = knob(
        "words", "text augmentations: units are whitespace-separated words, or characters (Chinese)")
    stopwords: tuple[str, ...] = knob(STOPWORDS, "stopword_insertion: the words inserted (the paper: 'and, the, of, "
                                                 "etc.'; OPEN)")


class SimCSELoss(MethodLoss):
    def __init__(self, encoder: Encoder, settings: SimCSESettings) -> None:
        super().__init__()
        self.encoder, self.s = encoder, settings
        self.build_extras(encoder)
        dim = encoder.model.config.hidden_size
        self.mlp = MlpHead(dim) if pooling_spec(settings.pooling).mlp_in_training else None

    def build_extras(self, encoder: Encoder) -> None:
        """Modules built before the MLP head (MED-SE's entity and definition encoders)."""

    def second_view(self, texts: list[str], generator: torch.Generator) -> list[str]:
        """The augmented texts of the second view (text augmentations only)."""
        s = self.s
        rng = np.random.default_rng(int(torch.randint(2**62, (1,), generator=generator)))
        mask = self.encoder.tokenizer.mask_token or "[MASK]"
        return [augment(t, s.augmentation, s.augmentation_rate, rng, mask, s.augmentation_unit, s.stopwords)
                for t in texts]

    def prepare(self, rows: pd.DataFrame, generator: torch.Generator, offsets: bool = False) -> dict[str, Any]:
        texts = rows["text"].tolist()
        n = len(texts)
        if self.s.augmentation in TEXT_AUGMENTATIONS:  # one padded batch of both views; offsets of the first
            both = self.encoder.tokenize(texts + self.second_view(texts, generator), offsets=offsets)
            features = {k: v[:n] for k, v in both.items()}
            doubled = {k: v for k, v in both.items() if k != "offset_mapping"}
        else:
            features = self.encoder.tokenize(texts, offsets=offsets)
            doubled = {k: torch.cat([v, v]) for k, v in features.items() if k != "offset_mapping"}
        batch: dict[str, Any] = {"n": n, "features": features, "doubled": doubled}
        mask = doubled["attention_mask"]
        if self.s.augmentation == "token_shuffle":
            batch["position_ids"] = shuffled_position_ids(mask, generator)
        elif self.s.augmentation == "token_cutoff":
            batch["cutoff"] = cutoff_rows(mask, self.s.augmentation_rate, generator)
        return batch

    def views(self, batch: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor, tuple[torch.Tensor, ...]]:
        """(z1, z2, hidden states of both views) for one prepared batch."""
        enc, doubled, n = self.encoder, batch["doubled"], batch["n"]
        if "position_ids" in batch:
            hs = enc.hidden_states(doubled, position_ids=batch["position_ids"])
        elif "cutoff" in batch:
            with zero_rows_after_embeddings(enc.model, batch["cutoff"]):
                hs = enc.hidden_states(doubled)
        else:
            hs = enc.hidden_states(doubled)
        emb = pool(hs, doubled["attention_mask"].to(enc.device), self.s.pooling, self.s.first_layer)
        if self.mlp is not None:
            emb = self.mlp(emb)
        return emb[:n], emb[n:], hs

    def forward(self, batch: dict[str, Any]) -> dict[str, torch.Tensor]:
        z1, z2, _ = self.views(batch)
        return {"sentence": info_nce(z1, z2, self.s.temperature)}


@METHODS.register("simcse")
class SimCSE(Method):
    name = "simcse"
    settings_class = SimCSESettings

    def example_view(self, text: str, seed: int, mask_token: str = "[MASK]") -> str | None:
        s = self.settings
        assert isinstance(s, SimCSESettings)
        if s.augmentation not in TEXT_AUGMENTATIONS:
            return None
        rng = np.random.default_rng(seed)
        return augment(text, s.augmentation, s.augmentation_rate, rng, mask_token, s.augmentation_unit, s.stopwords)

    def check(self, where: str, config: Mapping[str, Any]) -> None:
        s = self.settings
        assert isinstance(s, SimCSESettings)
        if s.augmentation == "dropout" and not s.dropout:
            raise InputError(where, "augmentation dropout with dropout: false gives two identical views",
                             "switch dropout on, or choose augmentation token_cutoff or token_shuffle")

    def build_loss(self, encoder: Encoder) -> MethodLoss:
        assert isinstance(self.settings, SimCSESettings)
        return SimCSELoss(encoder, self.settings)
