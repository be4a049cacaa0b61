"""Masked language modelling as a loss part (the healthcare-LM paper's eq. 1), shared by the
continued-MLM, DeCLUTR and note-category methods.

- :class:`Masking` (:func:`mask_tokens`): transformers' ``DataCollatorForLanguageModeling``
  masking (15% of the non-special tokens; of those 80% become the mask token, 10% a random
  token, 10% stay), its draws taken from the step's generator, so a resumed job masks the same
  tokens, and drawn over the length cap, so padding does not change them.
- :class:`MaskedLM`: the base model's own masked-LM head (``AutoModelForMaskedLM`` loaded
  from the same folder; a checkpoint without one, e.g. a sentence-transformers model, starts
  it from random weights) on top of the training encoder, whose module it shares: one
  forward pass gives the MLM loss (cross-entropy over the masked positions, as transformers'
  ``*ForMaskedLM`` computes it, with the head applied at those positions only) and every
  layer's states, which the methods pool into the document embedding. Only the encoder
  is saved, as for every method; the head is a training module.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import torch
from torch import nn

from clinsent.data.buckets import Group
from clinsent.data.encode import TextEncoder
from clinsent.data.positions import Alloc, StepRows, fresh
from clinsent.losses.base import Embedded, MethodLoss, gathered, own_text_encoder, take
from clinsent.methods.mlm import MlmSettings
from clinsent.models.encoder import Encoder, autocast, model_inputs

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Masking:
    """transformers' ``DataCollatorForLanguageModeling`` masking (``probability`` of the tokens
    that are not special; of those ``mask_replace_prob`` become the mask token, ``random_replace_prob``
    a random token of the vocabulary, the rest stay), its draws taken from a step's generator in the
    collator's order, over the length cap rather than the batch's width: a row's draws do not
    depend on how far its batch is padded, and at the cap they are the collator's own
    (``tests/train/test_tokens.py``). The mask token and the vocabulary size are read from the
    tokenizer once (:meth:`of`), not in every step."""

    mask_id: int
    vocab: int
    probability: float = 0.15
    mask_replace_prob: float = 0.8
    random_replace_prob: float = 0.1

    @classmethod
    def of(cls, tokenizer: Any, probability: float = 0.15, mask_replace_prob: float = 0.8,
           random_replace_prob: float = 0.1) -> Masking:  # fmt: skip
        mask_id = tokenizer.convert_tokens_to_ids(tokenizer.mask_token)
        return cls(int(mask_id), len(tokenizer), probability, mask_replace_prob, random_replace_prob)

    def __call__(
        self,
        input_ids: torch.Tensor,
        special_tokens_mask: torch.Tensor,
        generator: torch.Generator,
        cap: int | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(masked input ids, labels with -100 where no prediction is asked); special tokens and
        padding (``special_tokens_mask`` 1) are never chosen."""
        n, width = input_ids.shape
        full = max(cap or width, width)

        def drawn(p: torch.Tensor | float) -> torch.Tensor:
            chances = p if isinstance(p, torch.Tensor) else torch.full((n, full), p)
            return torch.bernoulli(chances, generator=generator)[:, :width].bool()

        chances = torch.zeros((n, full))
        chances[:, :width] = self.probability
        chances[:, :width].masked_fill_(special_tokens_mask.bool(), 0.0)
        masked = drawn(chances)
        labels = input_ids.masked_fill(~masked, -100)
        replaced = drawn(self.mask_replace_prob) & masked
        inputs = input_ids.masked_fill(replaced, self.mask_id)
        if self.mask_replace_prob == 1 or self.random_replace_prob == 0:
            return inputs, labels
        scaled = self.random_replace_prob / (1 - self.mask_replace_prob)
        randomised = drawn(scaled) & masked & ~replaced
        words = torch.randint(self.vocab, (n, full), dtype=torch.long, generator=generator)[:, :width]
        return torch.where(randomised, words, inputs), labels


def mask_tokens(
    input_ids: torch.Tensor,
    special_tokens_mask: torch.Tensor,
    tokenizer: Any,
    generator: torch.Generator,
    probability: float = 0.15,
    mask_replace_prob: float = 0.8,
    random_replace_prob: float = 0.1,
    cap: int | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """(masked input ids, labels with -100 where no prediction is asked): :class:`Masking` of
    ``tokenizer``, its draws over ``cap`` columns (default: the batch's width)."""
    masking = Masking.of(tokenizer, probability, mask_replace_prob, random_replace_prob)
    return masking(input_ids, special_tokens_mask, generator, cap)


class MaskedLM(nn.Module):
    """The training encoder with its masked-LM head (the encoder module is shared, not copied)."""

    def __init__(self, encoder: Encoder) -> None:
        super().__init__()
        from transformers import AutoModelForMaskedLM
        from transformers.utils import logging as hf_logging

        source = encoder.model.name_or_path
        verbosity = hf_logging.get_verbosity()
        hf_logging.set_verbosity_error()  # "some weights were not initialised": logged below, once
        try:
            full, info = AutoModelForMaskedLM.from_pretrained(source, output_loading_info=True)
        finally:
            hf_logging.set_verbosity(verbosity)
        fresh = [k for k in info.get("missing_keys", []) if not k.startswith(full.base_model_prefix)]
        if fresh:
            log.info(
                "the masked-LM head of %s starts from random weights (%d tensors not in the checkpoint)",
                source,
                len(fresh),
            )
        setattr(full, full.base_model_prefix, encoder.model)
        full.tie_weights()  # the output embeddings follow the shared encoder's input embeddings
        self.model = full
        self.encoder = encoder
        heads = [m for name, m in full.named_children() if name != full.base_model_prefix]
        # BERT's `cls`, RoBERTa's `lm_head`: one module from the last states to the vocabulary,
        # applied at the masked positions only (15% of the tokens: the vocabulary projection is
        # most of an MLM step's cost); other layouts run the model's own forward
        self.head = heads[0] if len(heads) == 1 else None

    def forward(
        self, features: dict[str, torch.Tensor], labels: torch.Tensor, chosen: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, ...]]:
        """(MLM loss, hidden states of every layer) of one pass over ``features``; the loss is 0
        when no position is masked (a short batch), not NaN. ``chosen``: the flat indices of the
        masked positions (:func:`masked_positions`, on the host when the batch is prepared, so
        the step never asks the device which positions they are); found here when not given."""
        device = self.encoder.device
        if chosen is None:
            chosen = masked_positions(labels)
        inputs = {
            k: v.to(device, non_blocking=True)
            for k, v in features.items()
            if k in ("input_ids", "attention_mask", "token_type_ids")
        }
        labels = labels.to(device, non_blocking=True)
        if self.head is None:
            with autocast(device, self.encoder.precision):
                out = self.model(
                    **model_inputs(self.model, inputs), labels=labels, output_hidden_states=True, return_dict=True
                )
            loss = out.loss.float() if len(chosen) else out.logits.float().sum() * 0.0
            return loss, tuple(out.hidden_states)
        index = chosen.to(device, non_blocking=True)
        with autocast(device, self.encoder.precision):
            hs = self.encoder.model(
                **model_inputs(self.encoder.model, inputs), output_hidden_states=True, return_dict=True
            ).hidden_states
            logits = self.head(hs[-1].flatten(0, 1).index_select(0, index))
        if not len(chosen):
            return logits.float().sum() * 0.0, tuple(hs)
        return torch.nn.functional.cross_entropy(logits.float(), labels.flatten().index_select(0, index)), tuple(hs)


def masked_positions(labels: torch.Tensor) -> torch.Tensor:
    """The flat indices (row-major over the batch's tokens) of the positions with an MLM label,
    found on the host (``labels`` as prepared, on the CPU)."""
    return torch.nonzero(labels.flatten() != -100).squeeze(1)


def tokenize_for_mlm(encoder: Encoder, texts: list[str]) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
    """Features and the special-tokens mask (padding included) of ``texts``."""
    features = encoder.tokenize(texts, special_tokens_mask=True)
    return features, features.pop("special_tokens_mask")


class MlmLoss(MethodLoss):
    """Continued masked language modelling (the healthcare-LM paper, Taylor et al., section 2.3.1,
    eq. 1) with the base model's own MLM head, 15% of non-special tokens masked 80/10/10
    (:class:`Masking`: transformers' ``DataCollatorForLanguageModeling`` draws, from the step's
    generator).

    Inputs (rows of whole notes, ``text``, or their token positions): ``features`` with masked
    ``input_ids``, ``labels``, ``mlm_chosen`` (flat indices of the masked positions, counted on
    the host) and ``mlm_total``. Output: ``{"mlm": cross-entropy over the masked tokens}``.
    Documents are truncated at the encoder's ``max_length``.

    Knobs (defaults: :class:`clinsent.methods.mlm.MlmSettings`): ``mlm_probability`` (the share of
    non-special tokens predicted), ``mask_replace_prob`` (of those, replaced by the mask token),
    ``random_replace_prob`` (by a random token; the rest stay).

    Example: ``MlmLoss(encoder, mlm_probability=0.15)``.
    """

    def __init__(
        self,
        encoder: Encoder,
        *,
        mlm_probability: float = MlmSettings.mlm_probability,
        mask_replace_prob: float = MlmSettings.mask_replace_prob,
        random_replace_prob: float = MlmSettings.random_replace_prob,
    ) -> None:
        super().__init__()
        self.encoder = encoder
        self.masking = Masking.of(encoder.tokenizer, mlm_probability, mask_replace_prob, random_replace_prob)
        self.lm = MaskedLM(encoder)

    def width_groups(self) -> dict[str, Group]:
        return {"text": Group(self.encoder.max_length)}

    def widths(self, rows: StepRows) -> dict[str, int]:
        return {"text": rows.tables["text"].width(rows.index["text"])}

    def text_encoder(self) -> TextEncoder:
        return own_text_encoder(self, "_text_encoder", self.encoder.tokenizer, self.encoder.max_length)

    def rows_of(self, frame: pd.DataFrame) -> StepRows:
        table, _ = self.text_encoder().encode(frame["text"].astype(str).tolist())
        return StepRows(len(frame), {"text": table}, {"text": np.arange(len(frame))}, frame=lambda: frame)

    def assemble(self, rows: StepRows, generator: torch.Generator, alloc: Alloc = fresh) -> dict[str, Any]:
        table, index = rows.tables["text"], rows.index["text"]
        features = gathered([(table, index)], self.width("text", table.width(index)), alloc, special=True)
        return self.masked_features(features, generator)

    def masked(self, texts: list[str], generator: torch.Generator) -> dict[str, Any]:
        """``texts`` (a text made in the step: DeCLUTR's anchors) encoded and masked."""
        table, _ = self.text_encoder().encode(texts)
        own = np.arange(len(texts))
        features = gathered([(table, own)], self.width("text", table.width(own)), fresh, special=True)
        return self.masked_features(features, generator)

    def masked_features(self, features: dict[str, torch.Tensor], generator: torch.Generator) -> dict[str, Any]:
        """Tokenized rows (with their ``special_tokens_mask``) masked: their masked input ids and
        MLM labels; ``mlm_chosen``, the masked positions' flat indices (found here, on the host);
        ``n`` rows and ``mlm_total``, the masked positions of the whole batch (a chunk's MLM loss is
        its mean times its share of them, so the chunks' losses add up to the batch's)."""
        features = dict(features)
        special = features.pop("special_tokens_mask")
        ids, labels = self.masking(features["input_ids"], special, generator, self.encoder.max_length)
        chosen = masked_positions(labels)
        return {
            "n": len(ids),
            "features": {**features, "input_ids": ids},
            "labels": labels,
            "mlm_chosen": chosen,
            "mlm_total": len(chosen),
        }

    def chunk(self, batch: dict[str, Any], start: int, stop: int) -> dict[str, Any]:
        """Documents (or anchors) ``start..stop-1`` with their labels; the batch's ``mlm_total`` kept."""
        part = slice(start, stop)
        features = take({**batch["features"], "labels": batch["labels"]}, part)
        labels = features.pop("labels")
        return {
            "n": stop - start,
            "features": features,
            "labels": labels,
            "mlm_chosen": masked_positions(labels),
            "mlm_total": batch["mlm_total"],
        }

    def loss_and_states(self, batch: dict[str, Any]) -> tuple[torch.Tensor, tuple[torch.Tensor, ...]]:
        """(the MLM loss of ``batch``'s share of the whole batch's masked positions, every layer's states)."""
        loss, hs = self.lm(batch["features"], batch["labels"], batch["mlm_chosen"])
        count, total = len(batch["mlm_chosen"]), batch["mlm_total"]
        return (loss * (count / total) if total and count != total else loss), hs

    def embed(self, batch: dict[str, Any], fixed: bool = True) -> Embedded:
        return Embedded(parts={"mlm": self.loss_and_states(batch)[0]})
