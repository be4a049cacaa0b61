"""One step over several processes that equals the step on one device with the same global batch.

Every process makes the whole global batch (the same rows, and every host-side draw, from the
step's own generator: :func:`clinsent.train.loop.step_generator`), then embeds only its share of
the rows (:meth:`clinsent.train.processes.Processes.share`, the loss's own ``chunk``), through
DDP (torch's ``DistributedDataParallel``: its hooks average the gradients):

1. the share goes through the loss's ``embed`` (:class:`Embedder`, the module DDP wraps), in
   one pass, or, with ``mini_batch``, in chunks whose first pass has no gradient (the cached step
   of :mod:`clinsent.train.chunked`, its random state noted for the replay);
2. every process's vectors are gathered (:meth:`~clinsent.train.processes.Processes.gather`) and the
   loss's ``score`` runs on the whole global batch on every process, from detached copies that
   keep the gradient of the global loss with respect to every row's vector;
3. each process back-propagates that gradient's rows of its own vectors, and its own additive
   parts (an MLM loss already divided by the global batch's masked-token count: the batch is the
   global one), each times W; DDP's average over the W processes then leaves exactly the
   one-device gradient (a chunked share runs every pass but the last under ``no_sync``: one
   all-reduce a step).

Why the gradient is taken on gathered copies rather than through an all-gather with autograd
(``torch.distributed.nn.functional.all_gather``, the functional collectives): the backward pass
then holds no collective of its own, so the processes never wait on each other's autograd order,
and a process whose share lacks a vector (MED-SE's entity slots, where its rows have none) needs no
placeholder in its graph. The SimCSE repository's gather without gradient, with the local slice
swapped in, gives 1/W of the gradient; gradient clipping then clips another vector.

Dropout draws differ between processes (each process's generator is seeded by its rank), as a
cached step's chunks do: the step equals one device's in distribution; with deterministic views
(``dropout: false``) it equals it to float32 rounding.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from typing import Any

import torch
from torch import nn

from clinsent.errors import InputError
from clinsent.losses.base import Embedded, MethodLoss
from clinsent.train.chunked import RandomState, bounds
from clinsent.train.processes import Processes


class Embedder(nn.Module):
    """The module DDP wraps: every trainable module of the step (the encoder's model, its head,
    the loss's own) and a forward that is the loss's ``embed`` (DDP averages the gradients of
    the parameters a forward through it reached)."""

    def __init__(self, loss: MethodLoss, model: nn.Module, head: nn.Module | None) -> None:
        super().__init__()
        if type(loss).embed is MethodLoss.embed:
            raise InputError(
                "training.processes",
                f"{type(loss).__name__} has no embed/score halves (it defines forward only), so its batch "
                "cannot be split between processes",
                "set training.processes: 1 for this method, or give its loss embed and score",
            )
        self.loss, self.model, self.head = loss, model, head

    def forward(self, batch: dict[str, Any], fixed: bool = True) -> tuple[dict[str, torch.Tensor], ...]:  # noqa: D102
        e = self.loss.embed(batch, fixed)
        return e.vectors, e.fixed, e.parts


def wrap(embedder: Embedder) -> nn.parallel.DistributedDataParallel:
    """``embedder`` under DDP. ``find_unused_parameters``: a parameter that no loss uses in a
    step (BERT's pooler; MED-SE's entity encoder where a process's rows have no entity) is marked
    ready rather than left waiting, so DDP's all-reduce is never skipped in silence. No
    ``device_ids``: the module is on this process's device already (:meth:`Processes.device`), and
    DDP must not copy the batch to it, since the loss keeps some of its tensors on the host (the
    spans' lengths, the rows' indices) and copies the rest itself, without waiting."""
    return nn.parallel.DistributedDataParallel(embedder, device_ids=None, find_unused_parameters=True)


def _embedded(out: tuple[dict[str, torch.Tensor], ...]) -> Embedded:
    return Embedded(*out)


def spread_step(
    loss: MethodLoss,
    ddp: nn.parallel.DistributedDataParallel,
    batch: dict[str, Any],
    processes: Processes,
    device: torch.device,
    mini_batch: int | None = None,
    micro: int | None = None,
    scale: Callable[[torch.Tensor], torch.Tensor] = lambda t: t,
) -> dict[str, torch.Tensor]:
    """Back-propagate ``batch``'s loss from this process's share of its rows (see the module);
    returns the global loss parts (detached, the same on every process). ``mini_batch``: the
    share is stepped in cached chunks of that many rows; ``micro``: in accumulated micro-batches
    (a loss without in-batch negatives); ``scale``: the gradient scaler's (fp16)."""
    start, stop = processes.share(loss.rows(batch))
    size = mini_batch or micro
    spans = bounds(stop - start, size) if size and stop - start > size else [(0, stop - start)]
    chunks = [loss.chunk(batch, start + a, start + b) for a, b in spans]
    if micro:
        return processes.summed(_accumulated(loss, ddp, chunks, processes.world, scale))
    if len(chunks) == 1:
        first: list[Embedded] = [_embedded(ddp(chunks[0]))]
        states: list[RandomState] = []
    else:
        states, first = [], []
        with torch.no_grad():
            for c in chunks:
                states.append(RandomState(device))
                first.append(_embedded(ddp(c)))
    local = {k: torch.cat([e.vectors[k] for e in first if k in e.vectors]) for k in _names(first, "vectors")}
    fixed = {k: torch.cat([e.fixed[k] for e in first if k in e.fixed]) for k in _names(first, "fixed")}
    gathered, counts = processes.gather({**local, **{f"fixed:{k}": v for k, v in fixed.items()}})
    leaves = {k: gathered[k].requires_grad_(True) for k in local if k in gathered}
    leaves |= {k: v for k, v in gathered.items() if k not in local and not k.startswith("fixed:")}
    everyone = {**leaves, **{k.removeprefix("fixed:"): v for k, v in gathered.items() if k.startswith("fixed:")}}
    scored = loss.score(everyone, batch)
    if scored:
        total = torch.stack([v.float() for v in scored.values()]).sum()
        if total.requires_grad:
            scale(total).backward()
    mine = {k: _own_rows(leaves[k].grad, counts[k], processes.rank) for k in local}
    if len(chunks) == 1:
        _backward(first[0], mine, processes.world, scale)
    else:
        offsets = dict.fromkeys(local, 0)
        for i, (c, state) in enumerate(zip(chunks, states, strict=True)):
            sync = contextlib.nullcontext() if i == len(chunks) - 1 else ddp.no_sync()
            with sync:
                with state.replay():
                    again = _embedded(ddp(c, False))
                own = {}
                for k, v in again.vectors.items():
                    g = mine[k]
                    own[k] = g[offsets[k] : offsets[k] + len(v)] if g is not None else None
                    offsets[k] += len(v)
                _backward(again, own, processes.world, scale)
    parts = {
        k: torch.stack([e.parts[k].detach().float() for e in first if k in e.parts]).sum()
        for k in _names(first, "parts")
    }
    return {**processes.summed(parts), **{k: v.detach() for k, v in scored.items()}}


def _names(embedded: list[Embedded], field: str) -> list[str]:
    return list(dict.fromkeys(k for e in embedded for k in getattr(e, field)))


def _own_rows(grad: torch.Tensor | None, counts: list[int], rank: int) -> torch.Tensor | None:
    """This process's rows of a gathered vector's gradient."""
    if grad is None:
        return None
    start = sum(counts[:rank])
    return grad[start : start + counts[rank]]


def _backward(
    e: Embedded,
    grads: Mapping[str, torch.Tensor | None],
    world: int,
    scale: Callable[[torch.Tensor], torch.Tensor],
) -> None:
    """One backward pass of a share's (or chunk's) vectors, with their rows of the global
    gradient, and of its additive parts, each times ``world`` (DDP divides by it). Every output
    that has a graph goes in (a zero gradient where the loss did not read it), so DDP sees the
    backward of each forward it watched."""
    outputs, gradients = [], []
    for k, v in e.vectors.items():
        if v.requires_grad:
            g = grads.get(k)
            outputs.append(v)
            gradients.append(g.to(v.dtype) * world if g is not None else torch.zeros_like(v))
    if e.parts:
        additive = torch.stack([p.float() for p in e.parts.values()]).sum()
        if additive.requires_grad:
            outputs.append(scale(additive) * world)
            gradients.append(torch.ones_like(additive))
    if outputs:
        torch.autograd.backward(outputs, gradients)


def _accumulated(
    loss: MethodLoss,
    ddp: nn.parallel.DistributedDataParallel,
    chunks: list[dict[str, Any]],
    world: int,
    scale: Callable[[torch.Tensor], torch.Tensor],
) -> dict[str, torch.Tensor]:
    """A share of a loss without in-batch negatives in micro-batches (one pass each, every one
    but the last under ``no_sync``): returns this process's parts (its share of the batch's)."""
    totals: dict[str, torch.Tensor] = {}
    for i, c in enumerate(chunks):
        sync = contextlib.nullcontext() if i == len(chunks) - 1 else ddp.no_sync()
        with sync:
            e = _embedded(ddp(c))
            if e.vectors or e.fixed:
                raise ValueError(
                    f"{type(loss).__name__} compares rows across the batch: use a cached step (mini_batch)"
                )
            _backward(e, {}, world, scale)
        for k, v in e.parts.items():
            totals[k] = totals[k] + v.detach() if k in totals else v.detach()
    return totals
