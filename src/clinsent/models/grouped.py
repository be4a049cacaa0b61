"""Encoders of one architecture that train side by side, run as one grouped pass (``grouped``).

MED-SE trains a second encoder beside the sentence encoder: its definition encoder, a copy of the
base model; Contrastive Tension trains a twin beside the kept model. Run one after the other, two
encoders dispatch every operator of an encoder twice: a MED-SE step dispatched 2.08 times SimCSE's
operators (the CPU proxies), where an eager GPU step's time is the host's dispatching. Here both
encoders' token rows are one ``(tokens, hidden)`` matrix, the first encoder's rows first:

- each linear layer is one grouped matrix product (:func:`torch.nn.functional.grouped_mm`: each
  encoder's weight on its own rows; the query, key and value projections as one), its bias added
  through a ``(tokens, encoders)`` one-hot matrix (one ``addmm``);
- each layer norm normalises every row at once, then scales and shifts each row by its encoder's
  weights (looked up by the row's encoder, ``torch.addcmul``; float32, as a LayerNorm's under
  autocast);
- residuals, activations and dropout run on the whole matrix (a dropout probability and a
  training mode per encoder: where the encoders differ in mode, each is dropped out on its own);
- attention runs per encoder on its own layout: the padded ``(rows, width)`` one, or its packing's
  real tokens (``unpad``, :mod:`clinsent.models.unpadded`, variable-length attention included);
- the embeddings run per encoder, through each model's own module.

The weights of one kind (all layers' query, key and value projections of both encoders, ...) are
stacked by one operator per step, and their gradients unstacked by one (:class:`_Stacked`; torch's
own ``stack`` takes back one ``select`` per weight): the models' own parameters stay the leaves the
optimiser steps, the saved model is unchanged. A step then dispatches the operators of about one
encoder (``bench/bench_train.py --proxies``), and on a GPU each of the layer's products is one
kernel over both encoders' rows, where the definitions' few rows alone would leave it idle.

Why our own code: transformers runs one model per call; ``torch.func.vmap`` over stacked weights
needs equal shapes (the definitions padded to the sentences' rows and length: more work at a large
batch) and dispatched more operators than the two models one after the other
(``bench/twin_ops.py``: 4,545 against 3,406).

The same function: every state is each model's own forward's within 1e-5 (float32), and so is every
gradient (``tests/models/test_grouped.py``); dropout draws its masks over another layout, so a
curve differs by dropout's noise (as ``unpad``'s). On CUDA the grouped product takes bfloat16
(``precision: bf16``) and widths that are multiples of 8, on compute capability 9.0 or more
(:data:`GROUPED_CAPABILITY`: on 8.x PyTorch's grouped GEMM copies its group offsets to the host,
a sync per layer, which a captured step cannot hold).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

import torch
import torch.nn.functional as F

from clinsent.models.unpadded import Packing, attend, repad, supports

GROUPED_CAPABILITY = (9, 0)  # the grouped GEMM takes its offsets on the device from Hopper on

# what the encoders must share to run as one (each layer's shapes, activation, norms, dropout)
SHARED = (
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "intermediate_size",
    "hidden_act",
    "layer_norm_eps",
    "hidden_dropout_prob",
    "attention_probs_dropout_prob",
)


@dataclass(frozen=True)
class Part:
    """One encoder's batch in a grouped pass: its model, its inputs on the device, and its packing
    where it runs on its real tokens (None: every position of its padded layout), with
    variable-length attention (``varlen``, CUDA)."""

    model: Any
    inputs: dict[str, torch.Tensor]
    pack: Packing | None = None
    varlen: bool = False


def why_not(models: Sequence[Any], device: torch.device, dtype: torch.dtype | None) -> str | None:
    """Why ``models`` cannot run as one grouped pass on ``device`` computing in ``dtype`` (None:
    they can)."""
    for model in models:
        if not supports(model):
            return f"{type(model).__name__} has not BERT's layout"
        if _checkpointing(model):
            return "gradient checkpointing recomputes each model's own layers"
    configs = [model.config for model in models]
    for key in SHARED:
        if len({repr(getattr(config, key, None)) for config in configs}) > 1:
            return f"the encoders' {key} differ"
    if configs[0].hidden_size % 8 or configs[0].intermediate_size % 8:
        return "the grouped product takes widths that are multiples of 8"
    if device.type == "cuda":
        if dtype != torch.bfloat16:
            return "on CUDA the grouped product takes bfloat16 (precision: bf16)"
        if torch.cuda.get_device_capability(device) < GROUPED_CAPABILITY:
            return (
                "on CUDA the grouped product runs without a host sync from compute capability 9.0 (Hopper) on "
                "(on 8.x PyTorch's grouped GEMM copies its offsets to the host, once a layer)"
            )
    return None


def _checkpointing(model: Any) -> bool:
    """Whether transformers checkpoints ``model``'s layers (its newer name first: the older warns)."""
    name = (
        "is_activation_checkpointing"
        if hasattr(type(model), "is_activation_checkpointing")
        else "is_gradient_checkpointing"
    )
    return bool(getattr(model, name, False))


class _Stacked(torch.autograd.Function):
    """The leaves stacked by one operator, their gradients unstacked by one (``torch.stack``'s own
    backward takes one ``select`` per leaf)."""

    @staticmethod
    def forward(ctx: Any, *leaves: torch.Tensor) -> torch.Tensor:
        return torch.stack(leaves)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return grad.unbind(0)


# each kind of weight: its modules' tensors (paths in a layer), stacked together per layer and
# encoder, and whether it is a linear weight (given to the grouped product as (in, out))
KINDS: dict[str, tuple[tuple[str, ...], bool]] = {
    "qkv": (("attention.self.query.weight", "attention.self.key.weight", "attention.self.value.weight"), True),
    "qkv_bias": (("attention.self.query.bias", "attention.self.key.bias", "attention.self.value.bias"), False),
    "attention": (("attention.output.dense.weight",), True),
    "attention_bias": (("attention.output.dense.bias",), False),
    "attention_norm": (("attention.output.LayerNorm.weight", "attention.output.LayerNorm.bias"), False),
    "intermediate": (("intermediate.dense.weight",), True),
    "intermediate_bias": (("intermediate.dense.bias",), False),
    "output": (("output.dense.weight",), True),
    "output_bias": (("output.dense.bias",), False),
    "output_norm": (("output.LayerNorm.weight", "output.LayerNorm.bias"), False),
}


def _getter(path: str) -> Any:
    """A layer's tensor at ``path``, read through the modules' own dicts: a step reads some 400
    (BERT-base, two encoders), and ``nn.Module.__getattr__`` made that a millisecond a step."""
    *modules, name = path.split(".")

    def get(layer: Any) -> torch.Tensor:
        for key in modules:
            layer = layer._modules[key]
        return layer._parameters[name]

    return get


_GETTERS = {kind: tuple(_getter(path) for path in paths) for kind, (paths, _) in KINDS.items()}


def _weights(models: Sequence[Any], dtype: torch.dtype | None) -> dict[str, tuple[torch.Tensor, ...]]:
    """Each kind's stacked weights, one ``(encoders, ...)`` tensor per layer (linear weights as
    ``(encoders, in, out)``), in ``dtype`` where given (autocast's: the grouped product does not
    cast)."""
    layers = len(models[0].encoder.layer)
    out = {}
    blocks = [m.encoder.layer[i] for i in range(layers) for m in models]
    for kind, (parts, linear) in KINDS.items():
        leaves = [get(block) for block in blocks for get in _GETTERS[kind]]
        first = leaves[0].shape
        stacked = _Stacked.apply(*leaves)
        if linear:  # (out, in) pieces: their outputs one after the other, given as (in, out)
            stacked = stacked.view(layers, len(models), len(parts) * first[0], first[1]).transpose(2, 3)
        else:
            stacked = stacked.view(layers, len(models), len(parts) * first[0])
        out[kind] = (stacked.to(dtype) if dtype is not None and linear else stacked).unbind(0)
    return out


class _States(Sequence[torch.Tensor]):
    """One encoder's states, layer by layer (the embeddings' first), each made on the padded layout
    ``(rows, width, hidden)`` when first read (a pooling reads two of them)."""

    def __init__(self, embedded: torch.Tensor, flat: list[torch.Tensor], part: Part, start: int, rows: int) -> None:
        self.embedded, self.flat, self.part, self.start, self.rows = embedded, flat, part, start, rows
        self.made: dict[int, torch.Tensor] = {}

    def __len__(self) -> int:
        return 1 + len(self.flat)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return tuple(self[j] for j in range(*i.indices(len(self))))
        i = i + len(self) if i < 0 else i
        if not 0 <= i < len(self):
            raise IndexError(i)
        if i == 0:
            return self.embedded
        if i not in self.made:
            mine = self.flat[i - 1].narrow(0, self.start, self.rows)
            pack, shape = self.part.pack, tuple(self.embedded.shape)
            if pack is None:
                self.made[i] = mine.view(shape)
            else:
                self.made[i] = repad(mine, pack, pack.scatter.to(mine.device, non_blocking=True))
        return self.made[i]

    def __iter__(self) -> Iterator[torch.Tensor]:
        return (self[i] for i in range(len(self)))


def _membership(ends: list[int], device: torch.device) -> torch.Tensor:
    """Int64 ``(tokens,)``: which encoder each row of the grouped matrix belongs to (made on the
    device from Python counts: no copy)."""
    rows = torch.arange(ends[-1], device=device)
    group = (rows >= ends[0]).long()
    for end in ends[1:-1]:
        group = group + (rows >= end).long()
    return group


def hidden_states(parts: Sequence[Part]) -> list[Sequence[torch.Tensor]]:
    """Each part's states, layer by layer (the embeddings' first), padded ``(rows, width, hidden)``
    as its model's own forward returns them, from one grouped pass (see the module). The models
    pass :func:`why_not`."""
    models = [part.model for part in parts]
    first = models[0]
    device = parts[0].inputs["input_ids"].device
    dtype = torch.get_autocast_dtype(device.type) if torch.is_autocast_enabled(device.type) else None
    embedded, rows = [], []
    for part in parts:
        e = part.model.embeddings(
            input_ids=part.inputs["input_ids"],
            token_type_ids=part.inputs.get("token_type_ids"),
            position_ids=part.inputs.get("position_ids"),
        )
        embedded.append(e)
        every = e.reshape(-1, e.shape[-1])
        rows.append(
            every if part.pack is None else every.index_select(0, part.pack.index.to(device, non_blocking=True))
        )
    counts = [len(r) for r in rows]
    ends = [sum(counts[: g + 1]) for g in range(len(counts))]
    offsets = torch.cat([torch.full((1,), end, dtype=torch.int32, device=device) for end in ends])
    group = _membership(ends, device)
    encoders = torch.arange(len(parts), device=device)
    hot = (group[:, None] == encoders).to(dtype or embedded[0].dtype)  # (tokens, encoders): the biases
    weights = _weights(models, dtype)
    masks = [part.inputs["attention_mask"].bool()[:, None, None, :] for part in parts]  # True: attend
    size = first.config.hidden_size
    heads = first.config.num_attention_heads
    scale = getattr(first.encoder.layer[0].attention.self, "scaling", (size // heads) ** -0.5)
    modes = [model.training for model in models]

    def linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        product = F.grouped_mm(x.to(weight.dtype), weight, offs=offsets)
        return torch.addmm(product, hot, bias.to(product.dtype))

    def norm(x: torch.Tensor, scale_shift: torch.Tensor, eps: float) -> torch.Tensor:
        weight, bias = F.embedding(group, scale_shift).split(size, dim=1)  # float32, as a LayerNorm's
        return torch.addcmul(bias, F.layer_norm(x, (size,), eps=eps), weight)

    def dropout(x: torch.Tensor, i: int, path: str) -> torch.Tensor:
        """Layer ``i``'s dropout at ``path``: one draw over every row where the encoders share a mode."""
        if len(set(modes)) == 1:
            return attrgetter(path)(first.encoder.layer[i])(x)
        pieces = x.split(counts)
        return torch.cat([attrgetter(path)(m.encoder.layer[i])(p) for m, p in zip(models, pieces, strict=True)])

    x = torch.cat(rows)
    flat: list[torch.Tensor] = []
    for i, layer in enumerate(first.encoder.layer):
        w = {kind: stacked[i] for kind, stacked in weights.items()}
        qkv = linear(x, w["qkv"], w["qkv_bias"])
        attended = []
        for g, (part, piece) in enumerate(zip(parts, qkv.split(counts), strict=True)):
            p = part.model.encoder.layer[i].attention.self.dropout.p if modes[g] else 0.0
            if part.pack is None:
                n, width = part.inputs["input_ids"].shape
                q, k, v = piece.view(n, width, 3, heads, -1).permute(2, 0, 3, 1, 4).unbind(0)
                out = F.scaled_dot_product_attention(q, k, v, attn_mask=masks[g], dropout_p=p, scale=scale)
                attended.append(out.transpose(1, 2).reshape(n * width, size))
            else:
                q, k, v = piece.view(len(piece), 3, heads, -1).unbind(1)
                attended.append(attend(q, k, v, part.pack, masks[g], part.varlen, p, scale))
        a = linear(torch.cat(attended), w["attention"], w["attention_bias"])
        residual = dropout(a, i, "attention.output.dropout") + x
        h = norm(residual, w["attention_norm"], layer.attention.output.LayerNorm.eps)
        inner = layer.intermediate.intermediate_act_fn(linear(h, w["intermediate"], w["intermediate_bias"]))
        o = linear(inner, w["output"], w["output_bias"])
        residual = dropout(o, i, "output.dropout") + h
        x = norm(residual, w["output_norm"], layer.output.LayerNorm.eps)
        flat.append(x)
    return [_States(embedded[g], flat, part, ends[g] - counts[g], counts[g]) for g, part in enumerate(parts)]
