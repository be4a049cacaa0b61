"""Live training curves: the curve file that grows as a job trains, and the config's trackers.

- **The live curve** (:class:`LiveCurve`, always on): every row of the curve (one per eval set
  at each evaluation, with the losses) is appended to ``curve.jsonl`` in the job's working
  folder (the checkpoint folder, ``results/checkpoints/...`` or ``.model.work`` beside the
  model) and flushed, so ``tail -f`` or ``pandas.read_json(path, lines=True)`` shows the run as it
  goes. JSON lines, because the loss parts are known only after the first step. A resumed job
  starts the file again from its checkpoint's curve; a finished job's file goes with its working
  folder (the declared ``curve.csv`` holds the same rows). The working folder survives a failed
  job, whose declared outputs Snakemake removes.
- **Trackers** (``tracking: [tensorboard]`` at the top of the config; none by default): the
  loss and each loss part, the learning rate and the throughput at every logged step
  (each evaluation, and every ``progress.train_steps`` steps where set), and each curve set's metric at each
  evaluation, written beside the run (``results/models/<method>/<base>/seed<k>/tensorboard/``),
  so ``tensorboard --logdir results/`` shows every run. Not a training knob: it is no param of
  the train rule, so switching it retrains nothing (the train script reads it from the config,
  like ``progress``). Files only: compute nodes have no network, and nothing here opens one.

A tracker is one entry of :data:`TRACKERS` (a name and a class with ``scalars`` and ``close``);
values are taken where the loop already synchronises with the device, so tracking adds no sync.
"""

from __future__ import annotations

import json
import math
import shutil
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

LIVE_CURVE = "curve.jsonl"


class Tracker(Protocol):
    def scalars(self, step: int, values: Mapping[str, float]) -> None: ...

    def close(self) -> None: ...


class LiveCurve:
    """The curve rows of one job, appended and flushed as they come (see the module docstring)."""

    def __init__(self, folder: str | Path, rows: Iterable[Mapping[str, Any]] = ()) -> None:
        from clinsent.io.files import write_text

        self.path = Path(folder) / LIVE_CURVE
        write_text("".join(_line(row) for row in rows), self.path)  # a resumed job: its checkpoint's rows

    def append(self, rows: Iterable[Mapping[str, Any]]) -> None:
        from clinsent.io.files import append_lines

        append_lines([_line(row) for row in rows], self.path)


def _line(row: Mapping[str, Any]) -> str:
    clean = {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in row.items()}
    return json.dumps(clean) + "\n"


class TensorBoard:
    """TensorBoard event files (``torch.utils.tensorboard``; the ``tensorboard`` package)."""

    def __init__(self, folder: Path, first_step: int) -> None:
        from torch.utils.tensorboard import SummaryWriter

        if first_step <= 1:  # a fresh run: the last run's events would interleave with this one's
            shutil.rmtree(folder, ignore_errors=True)
        # resumed: events after the checkpoint's step (written before the kill) are dropped
        self.writer = SummaryWriter(str(folder), purge_step=first_step if first_step > 1 else None)

    def scalars(self, step: int, values: Mapping[str, float]) -> None:
        for tag, value in values.items():
            if math.isfinite(value):
                self.writer.add_scalar(tag, value, step)
        self.writer.flush()

    def close(self) -> None:
        self.writer.close()


TRACKERS: dict[str, Callable[[Path, int], Tracker]] = {"tensorboard": TensorBoard}  # name -> class(folder, first_step)


class Trackers:
    """The config's trackers together (none: every call does nothing)."""

    def __init__(self, names: Sequence[str] = (), folder: str | Path = ".", first_step: int = 1) -> None:
        unknown = [n for n in names if n not in TRACKERS]
        if unknown:
            from clinsent.errors import InputError

            raise InputError("config: tracking", f"unknown tracker(s) {unknown}", f"use {', '.join(sorted(TRACKERS))}")
        self.trackers: list[Tracker] = [TRACKERS[n](Path(folder) / n, first_step) for n in names]

    def scalars(self, step: int, values: Mapping[str, float]) -> None:
        for tracker in self.trackers:
            tracker.scalars(step, values)

    def close(self) -> None:
        for tracker in self.trackers:
            tracker.close()
