"""Prepare the next batches on a background thread while the current step runs.

Tokenization, span masks and augmentation draws are CPU work in Python; done on the step's
critical path they leave a GPU idle. ``prefetch(fn, steps, depth)`` yields ``(step, fn(step))``
in order, computing up to ``depth`` steps ahead. ``fn`` must draw its randomness from
per-step generators (never the global ones), so the batches do not depend on the timing.
An exception in ``fn`` is raised in the consumer at the step where it happened.

On CUDA the trainer also pins each prepared batch's tensors (:func:`pinned`, on the prefetching
thread), so the step's ``non_blocking`` copies to the GPU are truly asynchronous.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

T = TypeVar("T")
_DONE = object()


def prefetch(fn: Callable[[int], T], steps: Iterable[int], depth: int = 2) -> Iterator[tuple[int, T]]:
    if depth <= 0:
        for step in steps:
            yield step, fn(step)
        return
    q: queue.Queue[Any] = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def work() -> None:
        try:
            for step in steps:
                if stop.is_set():
                    return
                q.put((step, fn(step)))
        except BaseException as exc:  # handed to the consumer
            q.put(exc)
        q.put(_DONE)

    thread = threading.Thread(target=work, name="clinsent-prefetch", daemon=True)
    thread.start()
    try:
        while True:
            item = q.get()
            if item is _DONE:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        while thread.is_alive():  # unblock a producer waiting on a full queue
            try:
                q.get_nowait()
            except queue.Empty:
                thread.join(timeout=0.05)


def pinned(batch: Any, pin: Callable[[Any], Any] | None = None) -> Any:
    """``batch`` (nested dicts, lists and tuples) with every tensor in page-locked host memory
    (``pin``: how one tensor is pinned; ``Tensor.pin_memory`` by default, which needs CUDA)."""
    import torch

    pin = pin or (lambda t: t.pin_memory())
    if isinstance(batch, torch.Tensor):
        return pin(batch) if batch.device.type == "cpu" else batch
    if isinstance(batch, dict):
        return {k: pinned(v, pin) for k, v in batch.items()}
    if type(batch) in (list, tuple):
        return type(batch)(pinned(v, pin) for v in batch)
    return batch
