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
import math
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
        self,
        features: dict[str, torch.Tensor],
        labels: torch.Tensor,
        chosen: torch.Tensor | None = None,
        targets: torch.Tensor | None = None,
        total: torch.Tensor | float | None = None,
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, ...]]:
        """(MLM loss, hidden states of every layer) of one pass over ``features``.

        The loss is the cross-entropy summed over the masked positions, divided by ``total`` (the
        masked positions of the whole batch; default: those of ``labels``): the mean over the
        masked positions, as transformers' ``*ForMaskedLM`` computes it, for a whole batch; a
        chunk's share of it for a chunk. It is 0 when nothing is masked (a short batch), not NaN.
        ``chosen`` / ``targets``: the flat indices of the positions the head predicts and their
        labels (:func:`chosen_positions`, on the host when the batch is prepared, so the step never
        asks the device which positions they are; padded with label -100 to a fixed count for a
        captured step); found here when not given."""
        device = self.encoder.device
        if chosen is None or targets is None:
            chosen, targets = chosen_positions(labels)
        if total is None:
            total = float((labels != -100).sum())
        inputs = {
            k: v.to(device, non_blocking=True)
            for k, v in features.items()
            if k in ("input_ids", "attention_mask", "token_type_ids")
        }
        if self.head is None:
            with autocast(device, self.encoder.precision):
                out = self.model(**model_inputs(self.model, inputs), output_hidden_states=True, return_dict=True)
            logits, wanted = out.logits.flatten(0, 1), labels.flatten().to(device, non_blocking=True)
            hs = tuple(out.hidden_states)
        else:
            with autocast(device, self.encoder.precision):
                hs = self.encoder.model(
                    **model_inputs(self.encoder.model, inputs), output_hidden_states=True, return_dict=True
                ).hidden_states
                logits = self.head(hs[-1].flatten(0, 1).index_select(0, chosen.to(device, non_blocking=True)))
            wanted, hs = targets.to(device, non_blocking=True), tuple(hs)
        summed = torch.nn.functional.cross_entropy(logits.float(), wanted, ignore_index=-100, reduction="sum")
        if isinstance(total, torch.Tensor):
            return summed / total.to(device, non_blocking=True).clamp_min(1.0), hs
        return summed / max(total, 1.0), hs


def masked_positions(labels: torch.Tensor) -> torch.Tensor:
    """The flat indices (row-major over the batch's tokens) of the positions with an MLM label,
    found on the host (``labels`` as prepared, on the CPU)."""
    return torch.nonzero(labels.flatten() != -100).squeeze(1)


def chosen_positions(labels: torch.Tensor, count: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """(the flat indices of ``labels``' masked positions, their labels), padded to ``count``
    entries (position 0, label -100: the cross-entropy ignores them) where ``count`` is given."""
    chosen = masked_positions(labels)
    targets = labels.flatten().index_select(0, chosen)
    if count is None or count <= len(chosen):
        return chosen, targets
    pad = count - len(chosen)
    return torch.cat([chosen, chosen.new_zeros(pad)]), torch.cat([targets, targets.new_full((pad,), -100)])


def masked_slots(positions: int, probability: float) -> int:
    """The masked positions a captured step makes room for in a batch of ``positions`` token
    positions: the mean count plus six standard deviations of its binomial (a batch masks more
    about once in a billion; it then gets a shape of its own), a multiple of 64."""
    mean = positions * probability
    bound = mean + 6.0 * math.sqrt(max(mean * (1.0 - probability), 1.0))
    return min(-(-math.ceil(bound) // 64) * 64, max(positions, 1))


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
    ``input_ids``, ``labels``, ``mlm_chosen`` and ``mlm_targets`` (flat indices of the masked
    positions and their labels, found on the host) and ``mlm_total`` (their count, a tensor).
    Output: ``{"mlm": cross-entropy over the masked tokens}``. Documents are truncated at the
    encoder's ``max_length``.

    Knobs (defaults: :class:`clinsent.methods.mlm.MlmSettings`): ``mlm_probability`` (the share of
    non-special tokens predicted), ``mask_replace_prob`` (of those, replaced by the mask token),
    ``random_replace_prob`` (by a random token; the rest stay).

    Example: ``MlmLoss(encoder, mlm_probability=0.15)``.
    """

    capturable = True  # no host value in its step (the masked positions come with the batch)

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
        MLM labels; ``mlm_chosen`` and ``mlm_targets``, the masked positions' flat indices and labels
        (found here, on the host; with static shapes, padded to :func:`masked_slots` of the batch's
        positions, so a batch's shapes depend on its width alone); ``n`` rows and ``mlm_total``,
        the masked positions of the whole batch as a tensor (a chunk's loss is its summed
        cross-entropy over them, so the chunks' losses add up to the batch's)."""
        features = dict(features)
        special = features.pop("special_tokens_mask")
        ids, labels = self.masking(features["input_ids"], special, generator, self.encoder.max_length)
        slots = masked_slots(labels.numel(), self.masking.probability) if self.static_shapes else None
        chosen, targets = chosen_positions(labels, slots)
        return {
            "n": len(ids),
            "features": {**features, "input_ids": ids},
            "labels": labels,
            "mlm_chosen": chosen,
            "mlm_targets": targets,
            "mlm_total": (labels != -100).sum(dtype=torch.float32),
        }

    def chunk(self, batch: dict[str, Any], start: int, stop: int) -> dict[str, Any]:
        """Documents (or anchors) ``start..stop-1`` with their labels; the batch's ``mlm_total`` kept."""
        part = slice(start, stop)
        features = take({**batch["features"], "labels": batch["labels"]}, part)
        labels = features.pop("labels")
        chosen, targets = chosen_positions(labels)
        return {
            "n": stop - start,
            "features": features,
            "labels": labels,
            "mlm_chosen": chosen,
            "mlm_targets": targets,
            "mlm_total": batch["mlm_total"],
        }

    def loss_and_states(self, batch: dict[str, Any]) -> tuple[torch.Tensor, tuple[torch.Tensor, ...]]:
        """(the MLM loss of ``batch``'s share of the whole batch's masked positions, every layer's states)."""
        chosen, targets = batch["mlm_chosen"], batch["mlm_targets"]
        return self.lm(batch["features"], batch["labels"], chosen, targets, batch["mlm_total"])

    def embed(self, batch: dict[str, Any], fixed: bool = True) -> Embedded:
        return Embedded(parts={"mlm": self.loss_and_states(batch)[0]})
