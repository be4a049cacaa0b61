"""The training progress line: after the first step, then at least every ``every`` seconds.

``progress: step 12/40, loss 2.314 (mlm 0.41), 86.3 rows/s, ETA 0:01:05`` — the step, the loss
and its parts, rows (sentences, pairs or documents) per second since the loop began (wall clock:
evaluations and checkpoints count, as they do for the ETA) and the time left. Independent of
``eval_every``, so a short run shows a line from its first step.

Reading a loss on a GPU waits for the queued steps. The line never waits: when a line is due
(the host's clock says so), the loss is copied to pinned host memory without blocking and a
CUDA event recorded after the copy; the line is written at the first later step where the event
has completed (or at the loop's next sync point, or its end). On the CPU the values are ready at
once. So the steady-state step has no host sync of its own.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

import torch

from clinsent.process.eta import duration


class TrainProgress:
    """``due(step)``, ``take(step, losses)`` then ``poll()`` every step; ``every`` 0: no lines."""

    def __init__(
        self,
        first_step: int,
        steps: int,
        batch_size: int,
        log: Callable[[str], Any],
        every: float = 30.0,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.first, self.steps, self.batch_size, self.log, self.every, self.clock = (
            first_step,
            steps,
            batch_size,
            log,
            every,
            clock,
        )
        self.began = self.last = clock()
        self.pending: tuple[int, list[str], torch.Tensor, Any] | None = None
        self.lines = 0

    def due(self, step: int) -> bool:
        """A line is due: the first step, or ``every`` seconds since the last (none pending)."""
        if not self.every or self.pending is not None:
            return False
        return step == self.first or self.clock() - self.last >= self.every

    def take(self, step: int, losses: Mapping[str, torch.Tensor]) -> None:
        """Copy this step's losses to the host without waiting for them."""
        values = torch.stack([v.detach().float().reshape(()) for v in losses.values()])
        event = None
        if values.device.type == "cuda":
            host = torch.empty(values.shape, dtype=values.dtype, pin_memory=True)
            host.copy_(values, non_blocking=True)
            event = torch.cuda.Event()
            event.record()
            values = host
        self.pending = (step, list(losses), values, event)
        self.last = self.clock()

    def poll(self, synced: bool = False) -> None:
        """Write the pending line if its values have arrived (``synced``: the device is idle)."""
        if self.pending is None:
            return
        step, names, values, event = self.pending
        if event is not None and not synced and not event.query():
            return
        self.pending = None
        self.last = now = self.clock()
        shown = dict(zip(names, values.tolist(), strict=True))
        parts = ", ".join(f"{k.removeprefix('loss_')} {v:.4g}" for k, v in shown.items() if k != "loss")
        done = step - self.first + 1
        elapsed = max(now - self.began, 1e-9)
        self.lines += 1
        self.log(
            f"progress: step {step}/{self.steps}, loss {shown['loss']:.4g}"
            + (f" ({parts})" if parts else "")
            + f", {done * self.batch_size / elapsed:.1f} rows/s"
            + f", ETA {duration((self.steps - step) * elapsed / done)}"
        )
