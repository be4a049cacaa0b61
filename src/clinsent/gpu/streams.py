"""A second CUDA stream for work that does not depend on the step's main branch (MED-SE's definition
encoder beside the sentence encoder): :class:`Branch`.

A step's kernels queue on one stream and run one after another, even where two encoders share
nothing until the loss. On a second stream a branch can run beside the main one, filling the
GPU where one branch alone leaves it idle (a small batch's kernels). The branch is forked before
the main branch's own work is queued and joined after it (the current stream waits for the
branch only where the branch's output is first needed), so the two run side by side: MED-SE's
definition encoder's forward beside the sentence encoder's, and, since autograd runs each
backward operator on the stream of its forward, their backwards side by side too (autograd joins
the streams at the end of ``backward``). Inside a captured step (:mod:`clinsent.train.graphs`)
the fork and the join are captured as a graph's two branches. On the CPU a branch is not
parallel: its work runs where the caller puts it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch

_STREAMS: dict[int, Any] = {}


def _side(device: torch.device) -> Any:
    index = device.index if device.index is not None else torch.cuda.current_device()
    if index not in _STREAMS:
        _STREAMS[index] = torch.cuda.Stream(device=index)
    return _STREAMS[index]


class Branch:
    """A side branch of a step on ``device``, forked here: after everything queued so far on the
    current stream. :meth:`queued` puts work on it; :meth:`join` makes the current stream wait for
    it (call it after queuing the main branch's own work, before the branch's output is used).
    ``parallel`` is False on the CPU, where both do nothing."""

    def __init__(self, device: torch.device) -> None:
        self.device, self.parallel = device, device.type == "cuda"
        if self.parallel:
            self.main, self.side = torch.cuda.current_stream(device), _side(device)
            self.side.wait_stream(self.main)

    @contextlib.contextmanager
    def queued(self) -> Iterator[None]:
        """Inside: the work queued goes on the branch's stream."""
        if not self.parallel:
            yield
            return
        with torch.cuda.stream(self.side):
            yield

    def join(self) -> None:
        """The current stream waits for everything queued on the branch so far."""
        if self.parallel:
            self.main.wait_stream(self.side)


def joined(tensor: torch.Tensor, device: torch.device) -> torch.Tensor:
    """``tensor``, made on a side branch, marked as used by the current stream too (its memory is
    not reused until the current stream is done with it)."""
    if device.type == "cuda":
        tensor.record_stream(torch.cuda.current_stream(device))
    return tensor
