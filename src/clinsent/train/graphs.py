"""The whole training step captured once per batch shape as a CUDA graph, then replayed (``graphs``).

An eager step dispatches about a thousand kernels one by one from Python; on a GPU that host
work, not the GPU's, sets a small batch's pace (``docs/performance.md``). Captured, a step is one
replay: forward, loss, backward, gradient clipping and the fused optimiser step, with no Python
in between. Each step's batch is copied into the captured step's own input tensors first (from
page-locked buffers, asynchronously), and the schedule writes the learning rate into the
optimiser's rate tensor after each replay.

A capture holds for one shape: the job's length buckets (:mod:`clinsent.data.buckets`) give its
batches a few shapes, each captured the second time it is seen (the first runs eagerly on a side
stream, the warm-up a capture needs: lazy initialisation, the optimiser's state), with one line
in the log. Every capture shares one memory pool: the graphs never run at once, and nothing a
replay leaves behind is read after the next (its loss values are copied out at once). Dropout
draws from the CUDA generator, which torch registers with every graph (a replay advances it as
a step would). At most :data:`LIMIT` shapes are captured; a batch of another shape runs eagerly.

**Why a manual capture** (``torch.cuda.graph``) rather than ``torch.compile(mode=
"reduce-overhead")``: one graph holds the whole step, optimiser and clipping included, where
compile's graphs stop at the backward (three per shape); it needs no compilation (inductor's
first steps of a shape took tens of seconds here, against demo runs of a minute); and any loss
whose step is free of host syncs captures as it is (:mod:`clinsent.train.syncs`), a plugin's
included. ``compile`` stays a separate knob: a compiled step captures too.

What stays eager (one line in the log says which and why): the CPU, steps cut into chunks
(``mini_batch``, ``accumulate``: their random state is replayed through the host), fp16 (the
gradient scaler checks for overflow on the host), gradient checkpointing (it saves and restores
the random state), RMSprop, and a loss whose step reads host values
(:attr:`clinsent.losses.base.MethodLoss.capturable`: the bilstm's span lengths, DeCLUTR's spans,
made in the step). MLM's masked positions are found on the host with the batch and padded to a
fixed count for its width (:func:`clinsent.losses.mlm.masked_slots`), so continued MLM and
note-category steps are captured too; so is the unpadded forward (``unpad``), its packing padded
with scratch rows to a few fixed token counts per bucket (:mod:`clinsent.models.unpadded`).

Tested on the CPU with a recording stand-in for the capture (:class:`Recording`: the captured
step's own inputs, warm-up, replay and copies, against eager steps), and on CUDA by
``tests/train/test_cuda.py``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from clinsent.models.batch_tree import leaves, mapped, zipped

LIMIT = 32  # shapes captured at most (MED-SE: up to 4 sentence x 4 definition buckets); the others step eagerly
Parts = dict[str, torch.Tensor]


def signature(batch: Any) -> tuple[Any, ...]:
    """What fixes a captured step: every tensor's place, shape, dtype and device in the batch, and
    every other value (a count, a table: by identity). Two batches of one signature replay one graph."""
    return tuple(_key(path, leaf) for path, leaf in leaves(batch))


def _key(path: str, leaf: Any) -> tuple[Any, ...]:
    if isinstance(leaf, torch.Tensor):
        return (path, tuple(leaf.shape), leaf.dtype, leaf.device.type)
    if isinstance(leaf, (int, float, bool, str)) or leaf is None:
        return (path, leaf)
    return (path, id(leaf))


def on_device(batch: Any, device: torch.device) -> Any:
    """The batch with every tensor copied to a new tensor of ``device`` (a captured step's inputs)."""
    return mapped(batch, lambda t: t.to(device, non_blocking=True, copy=True))


def refill(static: Any, batch: Any) -> None:
    """Copy ``batch``'s tensors into ``static``'s (same signature), asynchronously."""
    zipped(static, batch, lambda to, value: to.copy_(value, non_blocking=True))


class CudaCapture:
    """The capture on a CUDA device: eager warm-up steps on a side stream, ``torch.cuda.graph``
    captures sharing one memory pool."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.pool: Any = None  # the memory pool every capture shares
        self.side = torch.cuda.Stream(device=device)

    def warm(self, step: Callable[[], Parts]) -> Parts:
        main = torch.cuda.current_stream(self.device)
        self.side.wait_stream(main)
        with torch.cuda.stream(self.side):
            out = step()
        main.wait_stream(self.side)
        return out

    def capture(self, body: Callable[[], Parts], zero: Callable[[], None]) -> tuple[Any, Parts]:
        graph = torch.cuda.CUDAGraph()
        # thread_local: a capture is invalidated by an unsafe call of this thread only, never by the
        # prefetching thread pinning the next batch's memory meanwhile
        with torch.cuda.graph(graph, pool=self.pool, capture_error_mode="thread_local"):
            outputs = body()
        self.pool = graph.pool()
        return graph, outputs

    def replay(self, graph: Any, outputs: Parts) -> Parts:
        graph.replay()
        return outputs


class Recording:
    """A stand-in for the capture where there is no CUDA (the tests): the warm-up runs as it is,
    a capture records the step's body without running it (as a CUDA capture runs nothing), and a
    replay runs the body again on the captured step's own inputs, its gradients made anew (as a
    captured backward writes them into the graph's own tensors)."""

    def __init__(self) -> None:
        self.captures = self.replays = 0

    def warm(self, step: Callable[[], Parts]) -> Parts:
        return step()

    def capture(self, body: Callable[[], Parts], zero: Callable[[], None]) -> tuple[Any, Parts]:
        self.captures += 1
        return (body, zero), {}

    def replay(self, graph: Any, outputs: Parts) -> Parts:
        self.replays += 1
        body, zero = graph
        zero()
        return body()


@dataclass
class _Captured:
    graph: Any
    inputs: Any
    outputs: Parts


class CapturedSteps:
    """A job's plain steps, each shape captured once and replayed (see the module).

    ``eager(batch)``: the step as it runs uncaptured (zero the gradients, forward, backward,
    clip, optimiser and schedule step) -> its recorded losses; ``body(batch)``: the same without
    zeroing and without the schedule step (what a graph captures); ``schedule()``: the schedule's
    step after a replay; ``zero()``: the gradients set to None before a capture, so the captured
    backward makes them in the graph's pool."""

    def __init__(
        self,
        eager: Callable[[Any], Parts],
        body: Callable[[Any], Parts],
        schedule: Callable[[], None],
        zero: Callable[[], None],
        device: torch.device,
        log: Callable[[str], Any] = print,
        capture: Any = None,
        limit: int = LIMIT,
    ) -> None:
        self.eager, self.body, self.schedule, self.zero = eager, body, schedule, zero
        self.device, self.log, self.limit = device, log, limit
        self.capture = capture if capture is not None else CudaCapture(device)
        self.graphs: dict[tuple[Any, ...], _Captured] = {}
        self.seen: Counter[tuple[Any, ...]] = Counter()

    def __call__(self, batch: Any) -> Parts:
        sig = signature(batch)
        found = self.graphs.get(sig)
        if found is None:
            self.seen[sig] += 1
            if self.seen[sig] == 1 or len(self.graphs) >= self.limit:  # the warm-up, or past the limit
                return self.capture.warm(lambda: self.eager(batch))
            found = self._capture(batch, sig)
        else:
            refill(found.inputs, batch)
        outputs = self.capture.replay(found.graph, found.outputs)
        self.schedule()
        return {k: v.clone() for k, v in outputs.items()}  # the next replay overwrites them

    def _capture(self, batch: Any, sig: tuple[Any, ...]) -> _Captured:
        inputs = on_device(batch, self.device)
        self.zero()
        graph, outputs = self.capture.capture(lambda: self.body(inputs), self.zero)
        shapes = ", ".join(
            f"{p.lstrip('.')} {list(s)}" for p, s, *_ in sig if isinstance(s, tuple) and "input_ids" in p
        )
        self.log(f"step graph {len(self.graphs) + 1}: captured for the batches of {shapes or 'this shape'}")
        found = _Captured(graph, inputs, outputs)
        self.graphs[sig] = found
        return found


def eager_reason(s: Any, loss: Any, device: torch.device, precision: str) -> str | None:
    """Why a job's steps cannot be captured (None: they can): see the module."""
    reasons = [
        (device.type != "cuda", f"the device is {device.type}"),
        (precision == "fp16", "fp16's gradient scaler checks for overflow on the host"),
        (bool(s.gradient_checkpointing), "gradient checkpointing saves and restores the random state"),
        (s.optimizer != "adamw", f"{s.optimizer} has no capturable fused step here"),
        (not getattr(loss, "capturable", False), f"{type(loss).__name__} reads host values in its step"),
    ]
    return next((why for cond, why in reasons if cond), None)
