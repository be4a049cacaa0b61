"""An encoder in training: a Hugging Face model, its tokenizer and a pooling.

Tokenization may run on the prefetching threads while the main thread evaluates: a fast
tokenizer must not be called from two threads at once (its padding and truncation state is
mutable), so the main thread uses the tokenizer and every other thread its own copy, made once
per thread (a deep copy takes about 50 ms).
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch

from clinsent.models.pooling import pool


def model_inputs(model: Any, inputs: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """``inputs`` with the padding mask in the 4-D form the model's attention takes, built on the
    device: transformers returns a 4-D mask as it is, where from a 2-D one it first checks on the
    device whether any token is padding (``padding_mask.all()``, a host sync in every forward)
    to drop the mask. SDPA takes a boolean mask (True: attend), eager attention an additive one;
    another attention implementation gets the 2-D mask as before. The cost: on CUDA a batch
    without padding no longer drops its mask for the flash kernel (batches of real sentences
    nearly always pad)."""
    mask = inputs.get("attention_mask")
    form = MASK_FORMS.get(getattr(getattr(model, "config", None), "_attn_implementation", None) or "")
    if mask is None or mask.dim() != 2 or form is None:
        return inputs
    return {**inputs, "attention_mask": form(mask[:, None, None, :], model)}


def _boolean_mask(keys: torch.Tensor, model: Any) -> torch.Tensor:
    return keys.bool()  # True: attend


def _additive_mask(keys: torch.Tensor, model: Any) -> torch.Tensor:
    dtype = next(model.parameters()).dtype
    return (1.0 - keys.to(dtype)) * torch.finfo(dtype).min


# a model's attention implementation -> the 4-D padding mask it takes (others: the 2-D mask)
MASK_FORMS: dict[str, Callable[[torch.Tensor, Any], torch.Tensor]] = {"sdpa": _boolean_mask, "eager": _additive_mask}


def autocast(device: torch.device, precision: str = "auto") -> Any:
    """The autocast of ``precision`` (:mod:`clinsent.gpu.precision`; ``auto``: bf16 on a GPU of
    compute capability >= 8.0, fp16 below, none on the CPU)."""
    from clinsent.gpu.precision import autocast as precision_autocast

    return precision_autocast(device, precision)


class Encoder:
    """A Hugging Face encoder with its tokenizer and a pooling."""

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        pooling: str,
        first_layer: int,
        max_length: int,
        device: torch.device,
        head: torch.nn.Module | None = None,
        precision: str = "auto",
        normalize: bool = False,
    ) -> None:
        from clinsent.gpu.precision import resolve

        self.model, self.tokenizer = model, tokenizer
        self.normalize = normalize  # the saved model ends in Normalize: encode gives unit vectors, as it will
        self.head = head  # a pooling's MLP kept at test time (``cls_mlp``): part of every embedding
        self.pooling, self.first_layer, self.max_length, self.device = pooling, first_layer, max_length, device
        self.precision = resolve(precision, device)  # bf16, fp16 or fp32: the forward pass's autocast
        self.unpad = False  # the layers run on the real tokens only (clinsent.models.unpadded; ``unpad``)
        self.varlen = False  # with unpad: variable-length flash attention on CUDA (``varlen_attention``)
        self._own = threading.local()  # each background thread's copy of the tokenizer
        self._lock = threading.Lock()

    def _tokenizer(self) -> Any:
        if threading.current_thread() is threading.main_thread():
            return self.tokenizer
        own = getattr(self._own, "tokenizer", None)
        if own is None:
            with self._lock:  # the copy reads the tokenizer's state: one copy at a time
                own = self._own.tokenizer = copy.deepcopy(self.tokenizer)
        return own

    def tokenize(
        self,
        texts: list[str],
        offsets: bool = False,
        special_tokens_mask: bool = False,
        max_length: int | None = None,
    ) -> dict[str, torch.Tensor]:
        """A padded batch truncated to ``max_length`` tokens (default: the training length)."""
        return dict(
            self._tokenizer()(
                texts,
                padding=True,
                truncation=True,
                max_length=max_length or self.max_length,
                return_tensors="pt",
                return_offsets_mapping=offsets,
                return_special_tokens_mask=special_tokens_mask,
            )
        )

    def _inputs(self, batch: dict[str, torch.Tensor], **extra: torch.Tensor) -> dict[str, torch.Tensor]:
        """The model's inputs of a tokenized batch, on the device."""
        return {
            k: v.to(self.device, non_blocking=True)
            for k, v in {**batch, **extra}.items()
            if k not in ("offset_mapping", "special_tokens_mask", "packing")
        }

    def hidden_states(self, batch: dict[str, torch.Tensor], **extra: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """Every layer's states as the model returns them (bf16 or fp16 under autocast): the
        pooling converts only the layers it reads to float32."""
        inputs = self._inputs(batch, **extra)
        if self.unpad:  # the packing made with the batch on the CPU (clinsent.models.unpadded.attach)
            from clinsent.models import unpadded

            pack = unpadded.packing_of(batch)
            with autocast(self.device, self.precision):
                return unpadded.hidden_states(self.model, inputs, pack, self.varlen)
        with autocast(self.device, self.precision):
            out = self.model(**model_inputs(self.model, inputs), output_hidden_states=True, return_dict=True)
        return tuple(out.hidden_states)

    def why_not_beside(self, other: Encoder) -> str | None:
        """Why this encoder and ``other`` cannot run as one grouped pass (None: they can;
        :func:`clinsent.models.grouped.why_not`, at this encoder's device and precision)."""
        from clinsent.models.grouped import why_not

        dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(self.precision)
        return why_not([self.model, other.model], self.device, dtype)

    def hidden_states_beside(
        self,
        batch: dict[str, torch.Tensor],
        other: Encoder,
        other_batch: dict[str, torch.Tensor],
        **extra: torch.Tensor,
    ) -> tuple[Sequence[torch.Tensor], Sequence[torch.Tensor]]:
        """This encoder's states of ``batch`` (with ``extra`` inputs) and ``other``'s of
        ``other_batch``, layer by layer as :meth:`hidden_states` gives them, from one grouped pass of
        both models (:mod:`clinsent.models.grouped`; the models pass its ``why_not``), each on its
        own layout (padded, or its real tokens where it runs ``unpad``)."""
        from clinsent.models import grouped, unpadded

        parts = [
            grouped.Part(
                enc.model,
                inputs,
                unpadded.packing_of(b) if enc.unpad else None,
                enc.varlen and unpadded.varlen_fallback_note(enc.device) is None,
            )
            for enc, b, inputs in (
                (self, batch, self._inputs(batch, **extra)),
                (other, other_batch, other._inputs(other_batch)),
            )
        ]
        with autocast(self.device, self.precision):
            mine, theirs = grouped.hidden_states(parts)
        return mine, theirs

    def pooled(self, hidden_states: Sequence[torch.Tensor], batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """The embeddings of a batch from its states: the pooling, then the head where there is one."""
        emb = pool(
            hidden_states, batch["attention_mask"].to(self.device, non_blocking=True), self.pooling, self.first_layer
        )
        return self.head(emb) if self.head is not None else emb

    def embed_batch(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        return self.pooled(self.hidden_states(batch), batch)

    def training_head(self, dim: int) -> torch.nn.Module | None:
        """The MLP a SimCSE-family loss puts on the pooled embedding: the encoder's own head when
        its pooling keeps one (``cls_mlp``), a fresh training-only one for ``cls``, else none."""
        from clinsent.models.pooling import MlpHead, pooling_spec

        if self.head is not None:
            return self.head
        return MlpHead(dim) if pooling_spec(self.pooling).mlp_in_training else None

    @torch.no_grad()
    def encode(self, texts: list[str], batch_size: int = 64, max_length: int | None = None) -> np.ndarray:
        """Embeddings in eval mode, each text truncated to ``max_length`` tokens (the evaluation
        length, :mod:`clinsent.evaluation.length`; default the training length), unit vectors where
        the saved model ends in ``Normalize``."""
        was_training = self.model.training
        self.model.eval()
        out = []
        for i in range(0, len(texts), batch_size):
            emb = self.embed_batch(self.tokenize(texts[i : i + batch_size], max_length=max_length)).float()
            if self.normalize:  # the training loss reads embed_batch's vectors as they are
                emb = torch.nn.functional.normalize(emb, p=2, dim=1)
            out.append(emb.cpu().numpy())
        self.model.train(was_training)
        return np.concatenate(out, axis=0) if out else np.zeros((0, 0), dtype=np.float32)


def checkpoint_layers(model: Any, dropout: bool = True) -> None:
    """Gradient checkpointing of every encoder layer (transformers' own, non-reentrant: the
    layer's forward is recomputed in the backward pass, the random state replayed, so dropout
    draws the same masks and the gradients are those of a stored forward). transformers
    checkpoints only in train mode, so for ``dropout: false`` every dropout probability is set
    to 0 and the model stays in train mode (BERT-family encoders have no other train-mode
    behaviour: the forward equals eval mode's)."""
    enable = getattr(model, "activation_checkpointing_enable", None) or model.gradient_checkpointing_enable
    enable()
    if not dropout:
        for module in model.modules():
            if isinstance(module, torch.nn.Dropout):
                module.p = 0.0
