"""Unsupervised SimCSE (Gao, Yao, Chen 2021, EMNLP, eq. 1; MED-SE eq. 1), with ConSERT's
token augmentations (Yan et al. 2021, ACL, section 3.2) or the biomedical augmentation paper's
text augmentations (section 4.2: random crop, word deletion, random swap, stop-word and
punctuation insertion; :mod:`clinsent.augment.text`) as the alternative views.

Each sentence of the batch goes through the encoder twice in one pass (2N rows), so the two
views differ by their dropout masks (with ``augmentation``, also by token shuffle or token
cutoff, or the second view is an augmented text; dropout stays on unless ``dropout: false``);
the loss is InfoNCE over cosine / tau, one direction, positives on the diagonal, no
intra-view negatives (SimCSE's ``cl_forward``; :func:`clinsent.losses.contrastive.info_nce`;
the loss module is :mod:`clinsent.losses.simcse`).
With ``pooling: cls`` the pooled [CLS] passes a fresh MLP head (Linear + tanh) in training
only. Why not sentence-transformers' MultipleNegativesRankingLoss: it cannot take the
first-last pooling's layer states, the per-row augmentation draws or the MLP used in training
only, and MED-SE needs the token states of the same forward pass.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeVar

import numpy as np

from clinsent.augment.text import STOPWORDS, TEXT_AUGMENTATIONS, augment
from clinsent.config.declare import knob
from clinsent.config.sections import RunConfig
from clinsent.errors import InputError
from clinsent.methods.base import METHODS, Method
from clinsent.methods.knobs import SentencePlanSettings, TrainedSettings


@dataclass(frozen=True)
class SimCSESettings(TrainedSettings, SentencePlanSettings):
    temperature: float = knob(0.05, "tau of InfoNCE", exclusiveMinimum=0)
    augmentation: Literal[
        "dropout",
        "token_cutoff",
        "token_shuffle",
        "random_crop",
        "word_deletion",
        "random_swap",
        "stopword_insertion",
        "punctuation_insertion",
    ] = knob(
        "dropout",
        "what makes the two views differ: dropout, ConSERT's token_cutoff / token_shuffle, or a text "
        "augmentation of the second view",
    )
    augmentation_rate: float = knob(
        0.15,
        "token_cutoff: share of tokens zeroed; random_crop: share of units masked; "
        "word_deletion: probability of dropping a unit; stopword_insertion: stop "
        "words per unit; punctuation_insertion: at most this share of units get a "
        "mark (AEDA: 0.3)",
        minimum=0,
        exclusiveMaximum=1,
    )
    augmentation_unit: Literal["words", "characters"] = knob(
        "words", "text augmentations: units are whitespace-separated words, or characters (Chinese)"
    )
    stopwords: tuple[str, ...] = knob(
        STOPWORDS, "stopword_insertion: the words inserted (the paper: 'and, the, of, etc.'; OPEN)"
    )


SimS = TypeVar("SimS", bound=SimCSESettings)  # MED-SE's and MixCSE's settings extend SimCSE's


@METHODS.register("simcse", settings=SimCSESettings)
class SimCSE(Method[SimS]):
    tokenized = True  # its batches gathered from the token files
    loss_class = "clinsent.losses.simcse:SimCSELoss"  # imported by build_loss alone
    reference = "unsupervised SimCSE (Gao, Yao, Chen 2021, EMNLP, eq. 1)"
    in_batch_negatives = True
    steps_in_chunks = True

    def example_view(self, text: str, seed: int, mask_token: str = "[MASK]") -> str | None:
        s = self.settings
        if s.augmentation not in TEXT_AUGMENTATIONS:
            return None
        rng = np.random.default_rng(seed)
        return augment(text, s.augmentation, s.augmentation_rate, rng, mask_token, s.augmentation_unit, s.stopwords)

    def check(self, where: str, config: RunConfig) -> None:
        s = self.settings
        if s.augmentation == "dropout" and not s.dropout:
            raise InputError(
                where,
                "augmentation dropout with dropout: false gives two identical views",
                "switch dropout on, or choose augmentation token_cutoff or token_shuffle",
            )
