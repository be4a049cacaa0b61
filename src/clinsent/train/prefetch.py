"""Prepare the next batches on background threads while the current step runs.

Tokenization, span masks and augmentation draws are CPU work in Python; done on the step's
critical path they leave a GPU idle. ``prefetch(fn, steps, depth, workers)`` yields
``(step, fn(step))`` in order, computing up to ``depth`` steps ahead on ``workers`` threads
(the fast tokenizers release the GIL while they encode, so several threads prepare several
batches at once: a compiled GPU step can be shorter than one batch's tokenization). ``fn`` must
draw its randomness from per-step generators (never the global ones), so the batches do not
depend on the timing or on which thread made them. An exception in ``fn`` is raised in the
consumer at the step where it happened.

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


def workers_for(device_type: str, threads: int) -> int:
    """Preparing threads for a training job: on a GPU the host's cores are free for them (up to 4,
    one core left to the step's own Python); on the CPU the step's kernels use the cores, so one."""
    return max(1, min(4, threads - 1)) if device_type == "cuda" else 1


def prefetch(
    fn: Callable[[int], T], steps: Iterable[int], depth: int = 2, workers: int = 1
) -> Iterator[tuple[int, T]]:
    if workers > 1 and depth > 0:
        yield from _pooled(fn, steps, max(depth, workers + 1), workers)
        return
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


def _pooled(fn: Callable[[int], T], steps: Iterable[int], depth: int, workers: int) -> Iterator[tuple[int, T]]:
    """``prefetch`` on a pool of ``workers`` threads, ``depth`` steps in flight, in order."""
    from collections import deque
    from concurrent.futures import Future, ThreadPoolExecutor

    pending: deque[tuple[int, Future[T]]] = deque()
    order = iter(steps)
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="clinsent-prefetch") as pool:
        try:
            for step in order:
                pending.append((step, pool.submit(fn, step)))
                if len(pending) >= depth:
                    break
            while pending:
                step, future = pending.popleft()
                result = future.result()  # an exception of fn: raised here, at its step
                nxt = next(order, None)
                if nxt is not None:
                    pending.append((nxt, pool.submit(fn, nxt)))
                yield step, result
        finally:
            for _, future in pending:  # the consumer stopped early: what is queued is not run
                future.cancel()


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
