"""``auto`` for the speed knobs ``graphs``, ``unpad``, ``grouped`` and ``compile``, decided per knob
and per objective from the results of a GPU check (:func:`decide`).

A speed knob changes how fast a step runs, not what it computes (within the tolerances the
tests state; with dropout on, its masks fall on another layout). Its ``auto`` (the default) is on
for an objective only where ``make gpu-check`` measured, on a GPU, the knob's step faster than the
step without it by more than :data:`SPREAD` (the run-to-run spread of such ratios), and the
knob's own CUDA equivalence tests passed on that device in the same check; off on the CPU, and
off for an objective the check did not measure (an objective never captured on a GPU stays eager).

The figures are the check's own file, never written by hand: ``bench/gpu/check.py`` writes
``auto.json`` into each check's folder (:func:`clinsent.gpu.speed` reads that format), and the one
this version decides from is copied here whole (:data:`FIGURES`), its origin named below
(:data:`FROM_CHECK`, :data:`FROM_COMMIT`; ``tests/train/test_speed.py`` holds the two equal).
What each figure is:

- ``graphs``: the captured step (``<objective>:graphs=true``) against the eager one, at batch 64 on
  the demo corpus's real lengths, BERT-base (the same run; where the eager row is in another check
  of the same day, each side's ratio to the same reference, as the file says);
- ``unpad``, ``grouped`` and ``compile``: the captured step with the knob against the captured step
  without it (``<objective>:graphs=true:<knob>=true`` against ``<objective>:graphs=true``): a knob
  is worth turning on only where it speeds up the step ``auto`` otherwise runs.

Until a GPU check has written that file for the code as it is, the figures of 2026-11-28 (H200)
decide: ``graphs`` on for SimCSE, MED-SE and supervised SimCSE, every other knob and objective off.

A config plans the same on any machine: ``auto`` is resolved by the train job on the device it
runs on (:func:`resolved`), and the run's record (``selection.json``, the card) says what ran. A
request that needs a knob turns ``auto`` on: ``varlen_attention: true`` needs ``unpad``, a
``compile_mode`` other than ``default`` needs ``compile``; ``gradient_checkpointing`` turns
``unpad``'s and ``grouped``'s ``auto`` off (neither forward checkpoints). Only an explicit conflicting
pair is refused, when the config is read (:meth:`clinsent.methods.base.Method.check_memory`).
"""

from __future__ import annotations

import dataclasses
import json
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

Auto = Literal["auto"]
SPREAD = 0.15
KNOBS = ("graphs", "unpad", "grouped", "compile")
FIGURES = Path(__file__).with_name("auto.json")
# the check whose auto.json FIGURES is (bench/gpu/check.py wrote it from the two checks of that day,
# whose figures the commit below recorded)
FROM_CHECK = "bench/results/cuda/2026-11-28-graphs/auto.json"
FROM_COMMIT = "908c7c1bdd2a560fc5c3f313fec8a6a7ddd01371"


@lru_cache(maxsize=4)
def figures(path: Path = FIGURES) -> dict[str, Any]:
    """A check's ``auto.json`` (see the module); an unreadable one is no figure at all (every
    ``auto`` off)."""
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {"knobs": {}}
    return found if isinstance(found, dict) and isinstance(found.get("knobs"), dict) else {"knobs": {}}


def decide(knob: str, objective: str, found: dict[str, Any] | None = None) -> bool:
    """The one decision of ``auto`` on CUDA: whether the check's figure of ``knob`` for ``objective``
    is below ``1 - SPREAD`` and every CUDA equivalence test of the knob passed in that check."""
    entry = (found if found is not None else figures()).get("knobs", {}).get(knob, {}).get(objective)
    if not isinstance(entry, dict) or not isinstance(entry.get("ratio"), (int, float)):
        return False
    tests = entry.get("tests")
    passed = isinstance(tests, dict) and bool(tests) and all(v == "passed" for v in tests.values())
    return passed and float(entry["ratio"]) < 1.0 - SPREAD


def resolved(settings: Any, device_type: str, objective: str) -> Any:
    """``settings`` (of a method of ``objective``) with ``compile``, ``unpad``, ``graphs`` and
    ``grouped`` as booleans for a job on ``device_type``."""
    changes: dict[str, bool] = {}
    cuda = device_type == "cuda"

    def measured(knob: str) -> bool:
        return cuda and decide(knob, objective)

    if getattr(settings, "unpad", False) == "auto":
        wanted = settings.varlen_attention or measured("unpad")
        changes["unpad"] = bool(wanted) and not settings.gradient_checkpointing
    if getattr(settings, "compile", False) == "auto":
        changes["compile"] = settings.compile_mode != "default" or measured("compile")
    if getattr(settings, "graphs", False) == "auto":
        changes["graphs"] = measured("graphs")
    if getattr(settings, "grouped", False) == "auto":
        changes["grouped"] = measured("grouped") and not settings.gradient_checkpointing
    return dataclasses.replace(settings, **changes) if changes else settings
