"""Prepare the next batches on background threads while the current step runs, where that pays.

A batch gathered from token files (:mod:`clinsent.data.tokens`) takes a fraction of a
millisecond and holds the interpreter lock throughout: the trainer makes it inline, on the
thread that dispatches the step (``depth`` 0), since a second thread would only contend for the
lock (each hand-over of the lock to a thread waiting on it can cost the interpreter's switch
interval, 5 ms). A batch whose text changes at every step (a text augmentation, DeCLUTR's spans)
is encoded by the fast tokenizer, which releases the lock while it encodes: it is prepared up to
``depth`` steps ahead on ``workers`` threads. ``prefetch(fn, steps, depth, workers)`` yields
``(step, fn(step))`` in order. ``fn`` must draw its randomness from per-step generators (never
the global ones), so the batches do not depend on the timing or on which thread made them. An
exception in ``fn`` is raised in the consumer at the step where it happened.

On CUDA a batch is gathered into page-locked buffers (:class:`clinsent.data.positions.Buffers`),
and any other tensor of a prepared batch is pinned (:func:`pinned`), so the step's
``non_blocking`` copies to the GPU are truly asynchronous.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

T = TypeVar("T")


def workers_for(device_type: str, threads: int) -> int:
    """Preparing threads for a training job: on a GPU the host's cores are free for them (up to 4,
    one core left to the step's own Python); on the CPU the step's kernels use the cores, so one."""
    return max(1, min(4, threads - 1)) if device_type == "cuda" else 1


class Prefetch(Iterator[tuple[int, T]]):
    """``(step, fn(step))`` in order, up to ``depth`` steps computed ahead on ``workers`` threads
    (``depth`` 0: inline, on the consumer's thread). :meth:`wait_full` waits until ``depth``
    batches are ready (a benchmark starts its clock there); :meth:`close` stops the threads."""

    def __init__(self, fn: Callable[[int], T], steps: Iterable[int], depth: int = 2, workers: int = 1) -> None:
        from collections import deque
        from concurrent.futures import Future, ThreadPoolExecutor

        self.fn, self.order, self.depth = (
            fn,
            iter(steps),
            max(depth, workers + 1) if workers > 1 and depth > 0 else depth,
        )
        self.pending: deque[tuple[int, Future[T]]] = deque()
        self.pool = (
            ThreadPoolExecutor(max_workers=max(workers, 1), thread_name_prefix="clinsent-prefetch")
            if depth > 0
            else None
        )
        self._fill()

    def _fill(self) -> None:
        while self.pool is not None and len(self.pending) < self.depth:
            step = next(self.order, None)
            if step is None:
                return
            self.pending.append((step, self.pool.submit(self.fn, step)))

    def __next__(self) -> tuple[int, T]:
        if self.pool is None:
            step = next(self.order)  # StopIteration ends the iteration
            return step, self.fn(step)
        if not self.pending:
            self.close()
            raise StopIteration
        step, future = self.pending.popleft()
        try:
            result = future.result()  # an exception of fn: raised here, at its step
        except BaseException:
            self.close()
            raise
        self._fill()
        return step, result

    def wait_full(self, timeout: float = 60.0) -> None:
        """Return once every batch in flight is ready (at most ``depth``), or after ``timeout`` s."""
        from concurrent.futures import wait

        wait([f for _, f in self.pending], timeout=timeout)

    def close(self) -> None:
        """Cancel what is queued and let the threads end (a consumer that stopped early)."""
        for _, future in getattr(self, "pending", ()):
            future.cancel()
        pool = getattr(self, "pool", None)  # (a constructor that failed left none)
        if pool is not None:
            self.pending.clear()
            pool.shutdown(wait=False, cancel_futures=True)

    def __del__(self) -> None:
        self.close()


def prefetch(fn: Callable[[int], T], steps: Iterable[int], depth: int = 2, workers: int = 1) -> Prefetch[T]:
    """``(step, fn(step))`` for each step, in order, prepared ahead (:class:`Prefetch`)."""
    return Prefetch(fn, steps, depth, workers)


def pinned(batch: Any, pin: Callable[[Any], Any] | None = None) -> Any:
    """``batch`` (nested dicts, lists, tuples and the unpadded forward's packings:
    :mod:`clinsent.models.batch_tree`) with every tensor in page-locked host memory (``pin``: how one
    tensor is pinned; ``Tensor.pin_memory`` by default, which needs CUDA), so its copy to the
    device is queued without the host waiting for it, as the batch's own tensors are."""
    from clinsent.models.batch_tree import mapped

    pin = pin or (lambda t: t.pin_memory())
    return mapped(batch, lambda t: pin(t) if t.device.type == "cpu" else t)
