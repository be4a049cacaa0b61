"""Large batches in bounded memory: a step's gradients computed chunk by chunk.

**Cached (GradCache) steps, for losses with in-batch negatives** (``mini_batch``; Gao, Zhang,
Han, Callan 2021, "Scaling Deep Contrastive Learning Batch Size under Memory Limited Setup";
sentence-transformers' ``CachedMultipleNegativesRankingLoss`` does the same for its MNR loss):

1. each chunk of ``mini_batch`` rows goes through the loss's ``embed`` without gradients, its
   random state (the CPU and CUDA generators: dropout is SimCSE's noise) noted first;
2. the loss's ``score`` over every row's vectors gives the loss; its backward pass stops at the
   vectors (leaves), which keep the gradient of the loss with respect to each;
3. each chunk goes through ``embed`` again with gradients, its random state replayed (the same
   dropout masks as in 1), and its vectors' cached gradients are back-propagated through it,
   with the chunk's additive parts (e.g. DeCLUTR's MLM loss).

Every negative of the batch is kept and the parameters get the full batch's gradients; the
memory is that of one chunk's graph plus the batch's vectors. With deterministic views the
loss and gradients equal a one-pass step's (float32, within 1e-5); with dropout each chunk draws
its own masks, so the step equals a one-pass step in distribution, not bit for bit.

**Accumulated steps, for losses without in-batch negatives** (``accumulate``; MLM, note
category): each micro-batch is one pass with gradients, its parts already scaled to its share
of the batch, so the summed gradients are the full batch's.

Why our own rather than sentence-transformers' cached losses: those exist for MNR, GIST and
their symmetric forms only, and take sentence-transformers' feature dicts; ours chunk any of
this project's losses (SimCSE's views, MED-SE's entities and definitions, MixCSE's blocks,
DeCLUTR's spans) through the loss's own ``embed``/``score`` halves
(:class:`clinsent.losses.base.MethodLoss`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import torch

from clinsent.losses.base import MethodLoss


class RandomState:
    """The CPU (and, on CUDA, the device's) generator state at one point, to draw the same
    dropout masks again (sentence-transformers' ``RandContext``)."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.cpu = torch.get_rng_state()
        self.cuda = torch.cuda.get_rng_state(device) if device.type == "cuda" else None

    @contextlib.contextmanager
    def replay(self) -> Iterator[None]:
        """Inside: the generators as they were; after: as they were before entering."""
        cuda = [self.device] if self.cuda is not None else []
        with torch.random.fork_rng(devices=cuda, device_type="cuda"):
            torch.set_rng_state(self.cpu)
            if self.cuda is not None:
                torch.cuda.set_rng_state(self.cuda, self.device)
            yield


def bounds(rows: int, size: int) -> list[tuple[int, int]]:
    """(start, stop) of consecutive chunks of at most ``size`` rows."""
    return [(a, min(a + size, rows)) for a in range(0, rows, size)]


def _concat(parts: list[dict[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
    keys = dict.fromkeys(k for p in parts for k in p)
    return {k: torch.cat([p[k] for p in parts if k in p]) for k in keys}


def cached_step(
    loss: MethodLoss,
    batch: dict[str, Any],
    size: int,
    device: torch.device,
    scale: Callable[[torch.Tensor], torch.Tensor] = lambda t: t,
) -> dict[str, torch.Tensor]:
    """Back-propagate ``batch``'s loss in chunks of ``size`` rows (GradCache, see the module);
    returns the loss parts (detached). ``scale``: the gradient scaler's (fp16), applied to every
    loss before its backward."""
    chunks = [loss.chunk(batch, a, b) for a, b in bounds(loss.rows(batch), size)]
    states, first = [], []
    with torch.no_grad():
        for c in chunks:
            states.append(RandomState(device))
            first.append(loss.embed(c))
    vectors = _concat([e.vectors for e in first])
    fixed = _concat([e.fixed for e in first])
    leaves = {k: v.detach().requires_grad_(True) for k, v in vectors.items()}
    scored = loss.score({**leaves, **fixed}, batch)
    if scored:
        total = torch.stack([v.float() for v in scored.values()]).sum()
        if total.requires_grad:
            scale(total).backward()
    grads = {k: leaf.grad for k, leaf in leaves.items()}
    offsets = dict.fromkeys(vectors, 0)
    for c, state in zip(chunks, states, strict=True):
        with state.replay():
            again = loss.embed(c, fixed=False)
        outputs, gradients = [], []
        for k, v in again.vectors.items():
            start = offsets[k]
            offsets[k] += len(v)
            g = grads[k]
            if g is not None and v.requires_grad:
                outputs.append(v)
                gradients.append(g[start : start + len(v)].to(v.dtype))
        if again.parts:
            additive = torch.stack([p.float() for p in again.parts.values()]).sum()
            if additive.requires_grad:
                outputs.append(scale(additive))
                gradients.append(torch.ones_like(additive))
        if outputs:
            torch.autograd.backward(outputs, gradients)
    summed = {
        k: torch.stack([e.parts[k].detach().float() for e in first if k in e.parts]).sum()
        for k in dict.fromkeys(k for e in first for k in e.parts)
    }
    return {**summed, **{k: v.detach() for k, v in scored.items()}}


def accumulated_step(
    loss: MethodLoss, batch: dict[str, Any], micro: int, scale: Callable[[torch.Tensor], torch.Tensor] = lambda t: t
) -> dict[str, torch.Tensor]:
    """Back-propagate ``batch``'s loss in micro-batches of ``micro`` rows, one pass each; the
    loss's parts must add up over rows (no ``score``: no in-batch negatives). Returns the parts."""
    totals: dict[str, torch.Tensor] = {}
    for a, b in bounds(loss.rows(batch), micro):
        e = loss.embed(loss.chunk(batch, a, b))
        if e.vectors or e.fixed:
            raise ValueError(f"{type(loss).__name__} compares rows across the batch: use a cached step (mini_batch)")
        scale(torch.stack([p.float() for p in e.parts.values()]).sum()).backward()
        for k, v in e.parts.items():
            totals[k] = totals[k] + v.detach() if k in totals else v.detach()
    return totals
