"""A second CUDA stream for work that does not depend on the step's main branch (MED-SE's definition
encoder beside the sentence encoder): :func:`side_branch`.

A step's kernels queue on one stream and run one after another, even where two encoders share
nothing until the loss. On a second stream a branch can run beside the main one, filling the
GPU where one branch alone leaves it idle (a small batch's kernels). Autograd runs each backward
operator on the stream of its forward and joins the streams at the end of ``backward``; inside a
captured step (:mod:`clinsent.train.graphs`) the fork and the join are captured as a graph's two
branches. On the CPU the branch runs where it is.
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


@contextlib.contextmanager
def side_branch(device: torch.device) -> Iterator[Any]:
    """Inside: a second stream of ``device`` (after everything queued so far on the current one);
    after: the current stream waits for it. Yields the stream the branch's outputs were made on
    (None on the CPU): pass each output the main branch keeps to :func:`joined`."""
    if device.type != "cuda":
        yield None
        return
    main, side = torch.cuda.current_stream(device), _side(device)
    side.wait_stream(main)
    with torch.cuda.stream(side):
        yield side
    main.wait_stream(side)


def joined(tensor: torch.Tensor, device: torch.device) -> torch.Tensor:
    """``tensor``, made on a side branch, marked as used by the current stream too (its memory is
    not reused until the current stream is done with it)."""
    if device.type == "cuda":
        tensor.record_stream(torch.cuda.current_stream(device))
    return tensor
