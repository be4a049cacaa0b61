"""``auto`` for the speed knobs ``compile``, ``unpad``, ``graphs`` and ``grouped``, decided by measurement.

A speed knob changes how fast a step runs, not what it computes (within the tolerances the
tests state; with dropout on, its masks fall on another layout). ``auto`` (their default) turns
a knob on where a CUDA measurement showed it faster, and off on the CPU: ``make gpu-check``'s
``bench-train`` rows at batch 64 on the demo corpus's real lengths, BERT-base, each the ratio of
the knob's step to the same run's eager padded step; a knob is on when that ratio is below
``1 - SPREAD`` (the run-to-run spread of such ratios, about 0.15). :data:`MEASURED` holds the
figures and where they come from; ``None`` (no CUDA measurement of the knob yet) is off.

A config plans the same on any machine: ``auto`` is resolved by the train job on the device it
runs on (:func:`resolved`), and the run's record (``selection.json``, the card) says what ran. A
request that needs a knob turns ``auto`` on: ``varlen_attention: true`` needs ``unpad``, a
``compile_mode`` other than ``default`` needs ``compile``; ``gradient_checkpointing`` turns
``unpad``'s and ``grouped``'s ``auto`` off (neither forward checkpoints). Only an explicit conflicting
pair is refused, when the config is read (:meth:`clinsent.methods.base.Method.check_memory`).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Literal

Auto = Literal["auto"]
SPREAD = 0.15
# knob -> (step time / eager padded step time, batch 64, real lengths, BERT-base: the larger of
# SimCSE's and MED-SE's ratios; the measurement), or None: not measured on CUDA yet (auto is off)
MEASURED: dict[str, tuple[float, str] | None] = {
    "compile": (0.89, "H200, 2026-11-28 (bench/results/cuda/2026-11-28-full): SimCSE 0.82, MED-SE 0.89"),
    "unpad": (1.03, "H200, 2026-11-28 (bench/results/cuda/2026-11-28-full): SimCSE 1.03, MED-SE 0.97"),
    "graphs": (0.28, "H200, 2026-11-28 (bench/results/cuda/2026-11-28-graphs): SimCSE 0.28, MED-SE 0.23"),
    "grouped": None,  # MED-SE's row of make gpu-check (medse:grouped=true), not yet run on a GPU
}


def faster_on_cuda(knob: str) -> bool:
    """Whether the CUDA measurement of ``knob`` showed it faster by more than the spread."""
    figure = MEASURED.get(knob)
    return figure is not None and figure[0] < 1.0 - SPREAD


def resolved(settings: Any, device_type: str) -> Any:
    """``settings`` with ``compile``, ``unpad``, ``graphs`` and ``grouped`` as booleans for a job on
    ``device_type``."""
    changes: dict[str, bool] = {}
    cuda = device_type == "cuda"
    if getattr(settings, "unpad", False) == "auto":
        wanted = settings.varlen_attention or (cuda and faster_on_cuda("unpad"))
        changes["unpad"] = bool(wanted) and not settings.gradient_checkpointing
    if getattr(settings, "compile", False) == "auto":
        changes["compile"] = settings.compile_mode != "default" or (cuda and faster_on_cuda("compile"))
    if getattr(settings, "graphs", False) == "auto":
        changes["graphs"] = cuda and faster_on_cuda("graphs")
    if getattr(settings, "grouped", False) == "auto":
        changes["grouped"] = cuda and faster_on_cuda("grouped") and not settings.gradient_checkpointing
    return dataclasses.replace(settings, **changes) if changes else settings
