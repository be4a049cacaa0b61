"""A BERT-architecture encoder's forward over the real tokens only (``unpad: true``).

Real training sentences are short and uneven (the demo corpus: 24.7 tokens on average, p90 34):
with dynamic padding 35-45% of a batch of 64 is padding, and every linear layer, layer norm and
activation of every layer runs on it. Here the batch is packed once into a ``(tokens, hidden)``
matrix of its real tokens (the packing, :func:`packing`, comes from the attention mask on the
CPU: no host sync), every layer's projections, feed-forward, residuals, layer norms and dropout
run on that matrix, and only attention sees sequences:

- ``varlen_attention: false`` (the default with ``unpad``): each layer's queries, keys and
  values are scattered back into ``(batch, heads, length, dim)`` and go through
  ``scaled_dot_product_attention`` with the padding mask and the model's attention-probability
  dropout, then gathered back. The attention matmuls still run over the padded length (at
  BERT-base shapes and sentence lengths they are a few percent of the layer's FLOPs); the rest of
  the layer does not.
- ``varlen_attention: true`` (CUDA): torch's variable-length flash attention
  (``torch.nn.attention.varlen.varlen_attn``) over the packed tokens with the sentences'
  cumulative lengths, so nothing runs on padding at all. That kernel has **no attention-probability
  dropout**: SimCSE's noise then lacks that part of it (a departure, named by this knob and on the
  fidelity page). On the CPU it falls back to the padded attention above, saying so.

Why this and not packing with a block-diagonal mask (attention over the whole packed row:
quadratic in the batch's tokens) or nested tensors (transformers' BERT does not take them):
this keeps transformers' own modules and weights (embeddings, each layer's ``attention.self``
projections, ``attention.output``, ``intermediate``, ``output``), so any BERT-family checkpoint
loads as before and the saved model is unchanged. The embeddings run on the padded layout (a
lookup and a layer norm, cheap) through the model's own module, so its hooks (ConSERT's token
cutoff) and explicit ``position_ids`` (token shuffle) work as in the padded forward.

**A captured step's packing** (``graphs``: one CUDA graph per batch shape) cannot take a batch's own
token count, which changes from batch to batch. There the packing is *static*
(:func:`packing` with ``static=True``, which the trainer asks for whenever it makes the shapes
static): the real tokens are followed by scratch rows up to a multiple of the *granule*
(:func:`granule`: an eighth of the padded layout, rounded up to 64 rows, so at most eight token
counts per bucket and a few in practice, each wasting under an eighth of the padded layout's
work); the scratch rows are copies of the first token (finite, so no NaN reaches a weight's
gradient through a zero), their attention runs over short dummy sequences of their own
(``varlen_attention``) or not at all (the padded attention), their states are written to rows
past the padded layout that nothing reads, so every real token's state and gradient is the
exact packing's (within 1e-5 in float32: the matrix products run over more rows). The sentences'
cumulative lengths get a fixed number of dummy boundaries, each dummy sequence at most the
batch's width, and the longest sentence is taken to be the width.

The hidden states come back padded, ``(batch, length, hidden)`` with zeros at the padding, one
per layer as transformers returns them, so pooling and MED-SE's token states read them as
before. In eval mode the pooled embeddings equal the padded forward's within 1e-5 (float32;
``tests/models/test_unpadded.py``). With dropout the masks are drawn over another layout, so a curve
differs from the padded one by dropout's noise: off by default.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from clinsent.models import batch_tree


@batch_tree.record
@dataclass(frozen=True)
class Packing:
    """Where a batch's real tokens are: ``index`` their positions in the flattened
    ``(batch x length)`` layout, ``cu_lengths`` the cumulative sentence lengths (int32),
    ``max_length`` the longest sentence; all made on the CPU. A static packing (see the module)
    also has scratch rows: their ``index`` is 0 (they read the first token), ``target`` the rows
    the packed states are written back to (the real tokens' positions, then ``room`` rows past the
    layout's ``batch x length`` for the scratch rows), ``cu_lengths`` ends with their dummy
    sequences, ``max_length`` is the width; in an exact packing ``target`` is ``index`` and
    ``room`` 0."""

    index: torch.Tensor
    cu_lengths: torch.Tensor
    max_length: int
    shape: tuple[int, int]
    target: torch.Tensor | None = None
    room: int = 0

    @property
    def scatter(self) -> torch.Tensor:
        """The rows the packed states are written back to."""
        return self.index if self.target is None else self.target


def granule(rows: int, width: int) -> int:
    """A static packing's token counts are multiples of this: an eighth of the padded layout,
    rounded up to a multiple of 64 (the matrix units' tile)."""
    return max(64, -(-rows * width // 8 // 64) * 64)


def packing(attention_mask: torch.Tensor, static: bool = False) -> Packing:
    """The packing of a batch from its (CPU) attention mask; ``static``: padded with scratch rows
    to a multiple of :func:`granule`, with a fixed number of dummy sequences (see the module).
    Made with numpy on the mask's own memory: a few calls on small arrays, each holding the
    interpreter lock briefly, where torch's operators would each release and take it back."""
    mask = attention_mask.to("cpu").numpy() != 0
    rows, width = mask.shape
    lengths = mask.sum(axis=1)
    index = np.flatnonzero(mask)
    cu = np.zeros(rows + 1, np.int32)
    np.cumsum(lengths, out=cu[1:])
    if not static:
        longest = int(lengths.max()) if rows else 0
        return Packing(torch.from_numpy(index), torch.from_numpy(cu), longest, (rows, width))
    g, real = granule(rows, width), len(index)
    slack = max(g, -(-real // g) * g) - real  # under a granule; a whole one for an empty batch
    dummies = -(-g // max(width, 1))  # dummy sequences of at most the width cover any slack
    ends = real + np.minimum(np.arange(1, dummies + 1) * width, slack)
    return Packing(
        torch.from_numpy(np.concatenate([index, np.zeros(slack, np.int64)])),
        torch.from_numpy(np.concatenate([cu, ends.astype(np.int32)])),
        width,
        (rows, width),
        target=torch.from_numpy(np.concatenate([index, rows * width + np.arange(slack)])),
        room=g,
    )


PACKING = "packing"  # the key of a tokenized batch's packing, attached when the batch is prepared


def attach(batch: Any, static: bool = False) -> Any:
    """Every tokenized batch inside a prepared batch (a dict with a 2-D ``attention_mask``) given
    its packing under :data:`PACKING` (``static`` for a captured step's: see the module): made
    with the batch, so the step only reads it."""
    for found in batch_tree.dicts(batch):
        mask = found.get("attention_mask")
        if isinstance(mask, torch.Tensor) and mask.dim() == 2 and mask.device.type == "cpu":
            found[PACKING] = packing(mask, static)
    return batch


def packing_of(batch: dict[str, Any]) -> Packing:
    """A tokenized batch's packing: the one attached when it was prepared, or (a chunk of it, a
    batch built in the step) one made now from its mask."""
    given = batch.get(PACKING)
    mask = batch["attention_mask"]
    return given if isinstance(given, Packing) and given.shape == tuple(mask.shape) else packing(mask)


def supports(model: Any) -> bool:
    """Whether ``model`` has BERT's layout (embeddings, encoder.layer[i].attention.self.query, ...)."""
    layers = getattr(getattr(model, "encoder", None), "layer", None)
    return (
        hasattr(model, "embeddings")
        and layers is not None
        and len(layers) > 0
        and all(hasattr(layer, a) for layer in layers for a in ("attention", "intermediate", "output"))
        and hasattr(layers[0].attention, "self")
        and hasattr(layers[0].attention.self, "query")
    )


def _varlen_usable(device: torch.device) -> bool:
    return device.type == "cuda"


def _attention(
    self_attn: Any, hidden: torch.Tensor, pack: Packing, padded_mask: torch.Tensor, varlen: bool, training: bool
) -> torch.Tensor:
    """One layer's self-attention over packed tokens ``(T, hidden)`` -> ``(T, hidden)``."""
    heads, size = self_attn.num_attention_heads, self_attn.attention_head_size
    q, k, v = (proj(hidden).view(-1, heads, size) for proj in (self_attn.query, self_attn.key, self_attn.value))
    p = self_attn.dropout.p if training else 0.0
    return attend(q, k, v, pack, padded_mask, varlen, p, getattr(self_attn, "scaling", size**-0.5))


def attend(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    pack: Packing,
    padded_mask: torch.Tensor,
    varlen: bool,
    dropout: float,
    scale: float,
) -> torch.Tensor:
    """Attention of packed queries, keys and values ``(T, heads, size)`` -> ``(T, heads x size)``:
    variable-length flash attention (``varlen``, CUDA; no dropout) or ``scaled_dot_product_attention``
    on the padded layout with ``padded_mask`` (True: attend) and ``dropout``."""
    heads, size = q.shape[1], q.shape[2]
    if varlen:
        from torch.nn.attention.varlen import varlen_attn

        cu = pack.cu_lengths.to(q.device, non_blocking=True)
        out = varlen_attn(q, k, v, cu, cu, pack.max_length, pack.max_length, scale=scale)
        assert isinstance(out, torch.Tensor)  # no auxiliary outputs asked
        return out.reshape(-1, heads * size)
    batch, length = pack.shape
    index = pack.index.to(q.device, non_blocking=True)
    scatter = pack.scatter.to(q.device, non_blocking=True)

    def padded(x: torch.Tensor) -> torch.Tensor:  # (T, heads, size) -> (batch, heads, length, size)
        full = x.new_zeros(batch * length + pack.room, heads, size).index_copy(0, scatter, x)
        return (full[: batch * length] if pack.room else full).view(batch, length, heads, size).transpose(1, 2)

    out = F.scaled_dot_product_attention(
        padded(q), padded(k), padded(v), attn_mask=padded_mask, dropout_p=dropout, scale=scale
    )
    return out.transpose(1, 2).reshape(batch * length, heads * size).index_select(0, index)


def hidden_states(
    model: Any, inputs: dict[str, torch.Tensor], pack: Packing, varlen: bool = False
) -> tuple[torch.Tensor, ...]:
    """Every layer's states (the embeddings' first), padded ``(batch, length, hidden)``, of a
    BERT-architecture ``model`` run on the real tokens only (see the module)."""
    device = inputs["input_ids"].device
    varlen = varlen and _varlen_usable(device)
    batch, length = pack.shape
    index = pack.index.to(device, non_blocking=True)
    scatter = pack.scatter.to(device, non_blocking=True)
    embedded = model.embeddings(
        input_ids=inputs["input_ids"],
        token_type_ids=inputs.get("token_type_ids"),
        position_ids=inputs.get("position_ids"),
    )
    hidden = embedded.reshape(batch * length, embedded.shape[-1]).index_select(0, index)
    mask = inputs["attention_mask"].bool()[:, None, None, :]  # True: attend
    states = [embedded]
    for layer in model.encoder.layer:
        attn = _attention(layer.attention.self, hidden, pack, mask, varlen, model.training)
        hidden = layer.attention.output(attn, hidden)  # dense, dropout, layer norm of the residual
        hidden = layer.output(layer.intermediate(hidden), hidden)
        states.append(repad(hidden, pack, scatter))
    return tuple(states)


def repad(x: torch.Tensor, pack: Packing, scatter: torch.Tensor) -> torch.Tensor:
    """Packed states ``(T, hidden)`` back on the padded layout ``(batch, length, hidden)``, zeros at
    the padding (``scatter``: :attr:`Packing.scatter` on ``x``'s device)."""
    batch, length = pack.shape
    full = x.new_zeros(batch * length + pack.room, x.shape[-1]).index_copy(0, scatter, x)
    return (full[: batch * length] if pack.room else full).view(batch, length, x.shape[-1])


def varlen_fallback_note(device: torch.device) -> str | None:
    """The log line when ``varlen_attention`` cannot run on ``device`` (None: it can)."""
    if _varlen_usable(device):
        return None
    return (
        f"varlen_attention: torch's variable-length flash attention runs on CUDA only; on {device.type} "
        "attention runs on the padded layout with its dropout (the rest of each layer still unpadded)"
    )
