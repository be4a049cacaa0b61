"""One training step's rows as positions in token tables (:class:`StepRows`), and the buffers a
batch is gathered into (:class:`Buffers`).

A :class:`~clinsent.data.TrainingData` whose token tables were read (the ``tokens`` rule's files)
gives each step as a :class:`StepRows`: for each text column, the rows of its table; the per-row
numbers a loss reads besides text (MED-SE's span positions and definition rows, a document's
category code); and, for an objective whose text changes at every step, the rows themselves
(their text, read only when asked). A loss's ``assemble`` turns it into the step's batch
(:meth:`clinsent.losses.base.MethodLoss.assemble`), gathering into arrays a :class:`Buffers` gives.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from clinsent.data.tokens import TokenTable

Alloc = Callable[[str, tuple[int, ...], Any], np.ndarray]  # (name, shape, dtype) -> an array to fill


def fresh(name: str, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    """A new array for every batch (a test's, or a batch kept beyond its step)."""
    return np.empty(shape, dtype)


@dataclass(frozen=True)
class StepRows:
    """One step's ``n`` rows: ``index[column]`` the rows of ``tables[column]``; ``values`` per-row
    numbers (arrays of ``n``); ``frame()`` the rows' text and other columns."""

    n: int
    tables: Mapping[str, TokenTable]
    index: Mapping[str, np.ndarray]
    values: Mapping[str, np.ndarray] = field(default_factory=dict)
    frame: Callable[[], pd.DataFrame] | None = None

    def rows(self) -> pd.DataFrame:
        """The rows as a frame (their text): for an objective whose text changes at every step."""
        if self.frame is None:
            raise ValueError("these rows carry no text (token tables only)")
        return self.frame()


class Buffers:
    """Reused host buffers for the batches of a job, in ``slots`` rotating sets (batch ``k`` fills
    set ``k % slots``), so a batch is gathered into memory allocated once per shape: page-locked on
    CUDA (``pin``), so its copy to the device is asynchronous. A set is reused ``slots`` batches
    later; the trainer keeps fewer batches than that in flight (prefetched, stepping, and on CUDA
    still being copied: :meth:`fence` waits for that copy before the set is filled again)."""

    def __init__(self, slots: int, pin: bool = False) -> None:
        self.slots, self.pin = slots, pin
        self._sets: list[dict[tuple[str, tuple[int, ...], Any], np.ndarray]] = [{} for _ in range(slots)]
        self._fences: list[Any] = [None] * slots

    def for_batch(self, k: int) -> Alloc:
        """The allocator of batch ``k``: its set's buffer of each name and shape (made on first use)."""
        import torch

        slot = k % self.slots
        fence = self._fences[slot]
        if fence is not None:  # the set's last batch's copy to the device has finished
            fence.synchronize()
            self._fences[slot] = None
        kept = self._sets[slot]

        def alloc(name: str, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
            key = (name, shape, dtype)
            found = kept.get(key)
            if found is None:  # the array views the (page-locked) tensor, which it keeps alive
                tensor = torch.from_numpy(np.empty(shape, dtype))
                found = kept[key] = (tensor.pin_memory() if self.pin else tensor).numpy()
            return found

        return alloc

    def fence(self, k: int, event: Any) -> None:
        """Batch ``k``'s copies to the device are queued; ``event`` completes when they have run."""
        self._fences[k % self.slots] = event
