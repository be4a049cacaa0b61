"""The CPU proxies of a training step's host cost (``python bench/bench_train.py --proxies``): what a
session without a GPU can measure of what keeps a GPU waiting. For each method, on the tiny random
BERT, batch 64, length 128, the demo corpus's real lengths:

- ``prep``: the CPU time of all the host work, on every thread (``time.process_time`` while nothing
  else runs: a fast tokenizer encodes on threads of its own), that makes one batch
  ready for the forward pass (:meth:`clinsent.train.loop.MethodLoop.prepare`: gathering or
  tokenizing, the random draws, span masks, packing, page-locked buffers), median over the run,
  batch after batch; and ``paced``, the same with one batch every 10 ms (the pace of a GPU step)
  for :data:`WINDOW` seconds: a batch made after 10 ms of other work finds the caches and branch
  predictors cold and costs several times as much (the figure a step pays);
- ``lock``: the throughput a pure-Python thread loses while another thread prepares one batch
  every 10 ms for :data:`WINDOW` seconds: the share of the window the Python thread did not run
  (every gap of over :data:`GAP` between two turns of its loop: it waited for the interpreter
  lock, or the system ran something else), less the same share beside a thread that only sleeps
  on the same clock, over :data:`ROUNDS` interleaved rounds (their summed gaps): the share of
  the interpreter lock the preparation holds. Beside it, the share of the batches due that were
  made in time (a preparation that cannot keep the pace holds the lock less often than asked,
  and starves a GPU);
- ``copies``: tokenizer copies made while the trainer's loop runs (``copy.deepcopy`` of a
  tokenizer, counted);
- ``shapes``: distinct step signatures (:func:`clinsent.train.graphs.signature`: every input
  tensor's shape, the unpadded forward's packing's too) over the run's batches, made
  as a captured (CUDA) run makes them (static shapes: MED-SE's entity slots, MLM's masked
  slots), beside the number of length buckets;
- ``ops``: operators one step dispatches (:class:`clinsent.train.syncs.SyncCounter`), on BERT-base's
  depth (12 layers) at the tiny width, which dispatches what BERT-base dispatches; and each
  method's ratio to SimCSE's.

Each figure is printed as one line per method, ``<method>: prep <X> ms/batch, lock <Y>%, ...``,
and written to ``<out>/proxies.{json,md}``.
"""

from __future__ import annotations

import copy
import json
import statistics
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from unittest import mock

from clinsent.train.graphs import signature

PACE = 0.010  # one batch every 10 ms: the step's pace on a GPU
WINDOW = 2.0  # seconds a counting round lasts
# interleaved rounds with and without the preparing thread. The lost share is taken from the
# Python thread's gaps, not its iteration count: a round's count moved by 5 to 9 points with
# nothing prepared at all (2026-11-29, this machine: the speed of a loop varies from window to
# window), its gaps by under half a point
ROUNDS = 9
GAP = 20e-6  # a pause in the Python thread's loop longer than this is time it did not run


def thread_ms(prepare: Callable[[int], Any], steps: range) -> float:
    """The median CPU time, in ms, of preparing each of ``steps`` on this thread, counted over every
    thread of the process (a fast tokenizer encodes on threads of its own), nothing else running."""
    times = []
    for step in steps:
        t0 = time.process_time()
        prepare(step)
        times.append(time.process_time() - t0)
    return 1e3 * statistics.median(times)


def _lost(seconds: float) -> tuple[float, float]:
    """(seconds a pure-Python loop did not run: its pauses of over :data:`GAP`, the seconds it
    ran for), over about ``seconds``."""
    start = last = time.perf_counter()
    end, lost = start + seconds, 0.0
    while last < end:
        now = time.perf_counter()
        if now - last > GAP:
            lost += now - last
        last = now
    return lost, last - start


def paced_ms(prepare: Callable[[int], Any], steps: int) -> float:
    """The median CPU time, in ms, of a batch prepared every :data:`PACE` seconds on a thread of
    its own for :data:`WINDOW` seconds, counted over every thread of the process (this one
    sleeps)."""
    times: list[float] = []

    def timed(k: int) -> None:
        t0 = time.process_time()
        prepare(1 + k % steps)
        times.append(time.process_time() - t0)

    stop, done = threading.Event(), list[float]()
    thread = threading.Thread(target=_paced, args=(timed, stop, done), daemon=True)
    thread.start()
    time.sleep(WINDOW)
    stop.set()
    thread.join()
    return 1e3 * statistics.median(times)


def _paced(work: Callable[[int], Any] | None, stop: threading.Event, done: list[float]) -> None:
    """``work(k)`` (or nothing) once every :data:`PACE` seconds until ``stop``; the time each
    finished goes into ``done``."""
    tick, k = time.perf_counter(), 0
    while not stop.is_set():
        if work is not None:
            work(k)
        done.append(time.perf_counter())
        k += 1
        tick += PACE
        time.sleep(max(0.0, tick - time.perf_counter()))


def lock_share(prepare: Callable[[int], Any], steps: int) -> tuple[float, float]:
    """(the share (0..1) of a pure-Python thread's time lost to a thread preparing one batch
    every :data:`PACE` seconds, the share of the batches due in the window that were ready in
    it) over :data:`ROUNDS` interleaved rounds (see the module): the first from the rounds'
    summed gaps, less those beside a thread that only sleeps; the second their median. A
    preparation that cannot keep the pace holds the lock less often than asked: the second
    figure says so."""
    lost, spans, kept = [0.0, 0.0], [0.0, 0.0], []
    for _ in range(ROUNDS):
        for i, work in enumerate((None, lambda k: prepare(1 + k % steps))):
            stop, done = threading.Event(), list[float]()
            thread = threading.Thread(target=_paced, args=(work, stop, done), daemon=True)
            thread.start()
            time.sleep(0.05)  # the thread under way
            start = time.perf_counter()
            gaps, span = _lost(WINDOW)
            stop.set()
            thread.join()
            lost[i], spans[i] = lost[i] + gaps, spans[i] + span
        kept.append(min(1.0, sum(start <= t <= start + span for t in done) / (span / PACE)))
    return max(0.0, lost[1] / spans[1] - lost[0] / spans[0]), statistics.median(kept)


class CopyCount:
    """Counts ``copy.deepcopy`` calls on tokenizers while open (the trainer's per-thread copies)."""

    def __init__(self) -> None:
        self.copies = 0
        self._patch = mock.patch("copy.deepcopy", side_effect=self._deepcopy)
        self._real = copy.deepcopy

    def _deepcopy(self, obj: Any, memo: Any = None) -> Any:
        if "Tokenizer" in type(obj).__name__:
            self.copies += 1
        return self._real(obj, memo)

    def __enter__(self) -> CopyCount:
        self._patch.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._patch.stop()


def measure(ours: Any, steps: int, ops_of: Callable[[], int]) -> dict[str, Any]:
    """Every proxy of one method (``ours``: bench_train's ``Ours``, its plan ``steps`` long)."""
    loop, data = ours.loop, ours.data
    prepare = lambda step: loop.prepare(data, step)  # noqa: E731
    prepare(1)  # first-use costs (a tokenizer's lazy state) out of the figures
    prep = thread_ms(prepare, range(1, steps + 1))
    paced = paced_ms(prepare, steps)
    lock, kept = lock_share(prepare, steps)
    with CopyCount() as counted:
        ours.run(min(steps, 8))  # the trainer's loop: its prefetching threads and their tokenizers
    shapes = {signature(prepare(step)) for step in range(1, steps + 1)}  # as the captured step keys them
    return {
        "prep_ms": round(prep, 3),
        "paced_prep_ms": round(paced, 3),  # one batch every 10 ms: what a step pays
        "lock_share": round(lock, 4),
        "paced_share": round(kept, 3),  # of the batches due every 10 ms, those made in time
        "tokenizer_copies": counted.copies,
        "shapes": len(shapes),
        "buckets": _buckets(ours.loop),
        "ops": ops_of(),
    }


def _buckets(loop: Any) -> int | None:
    """How many shapes a run's buckets allow: the product of each width group's bucket count
    (MED-SE's sentences, definitions and spans), None without buckets."""
    groups = getattr(loop, "buckets", {}) or {}
    counts = [len(b.lengths) for b in groups.values() if b.lengths]
    out = 1
    for c in counts:
        out *= c
    return out if counts else None


def report(rows: dict[str, dict[str, Any]], meta: dict[str, Any], out: Path) -> list[str]:
    """One line per method (and the operator ratio to SimCSE); ``proxies.{json,md}`` under ``out``."""
    simcse = rows.get("simcse", {}).get("ops")
    lines = []
    for m, r in rows.items():
        r["ops_ratio_to_simcse"] = round(r["ops"] / simcse, 3) if simcse else None
        buckets = f" of {r['buckets']} buckets" if r["buckets"] else " (no buckets)"
        lines.append(
            f"{m}: prep {r['prep_ms']:.2f} ms/batch ({r['paced_prep_ms']:.2f} at the pace), "
            f"lock {100 * r['lock_share']:.1f}% "
            f"({100 * r['paced_share']:.0f}% of the batches due made in time), "
            f"tokenizer copies {r['tokenizer_copies']}, shapes {r['shapes']}{buckets}, ops {r['ops']}"
            + (f" ({r['ops_ratio_to_simcse']:.2f}x SimCSE)" if r["ops_ratio_to_simcse"] else "")
        )
    out.mkdir(parents=True, exist_ok=True)
    (out / "proxies.json").write_text(json.dumps({"meta": meta, "methods": rows}, indent=2) + "\n")
    md = [
        f"CPU proxies (bench/proxies.py), {meta}.",
        "",
        "| method | prep ms/batch | at the pace | lock | batches made in time | tokenizer copies "
        "| step shapes | buckets | operators/step | ops / SimCSE |",
        "|---|---|---|---|---|---|---|---|---|---|",
        *(
            f"| {m} | {r['prep_ms']:.2f} | {r['paced_prep_ms']:.2f} | {100 * r['lock_share']:.1f}% "
            f"| {100 * r['paced_share']:.0f}% | {r['tokenizer_copies']} | {r['shapes']} | "
            f"{r['buckets'] or '–'} | {r['ops']} | {r['ops_ratio_to_simcse'] or '–'} |"
            for m, r in rows.items()
        ),
    ]
    (out / "proxies.md").write_text("\n".join(md) + "\n")
    return lines
