"""The cost of a paper config's grid: train jobs, optimisation steps, and estimated GPU-hours.

Reads the config as the workflow does (methods through the registry, steps derived from
``epochs``; ``placeholders_ok`` is set, so the data need not be there) and sums, over the
grid's train jobs, the steps times a per-step time. The per-step time is either measured
(``--seconds-per-step``: what ``make bench-train`` reports for plain SimCSE on your GPU at the
config's batch and length) or estimated from FLOPs: 6 x parameters x tokens per step for the
trained encoder (both views), plus 2 x parameters x tokens for a frozen forward pass (instance
weighting's complementary model), at ``--mfu`` of ``--peak-tflops`` (dense bf16; H100 989).
Evaluation and embedding time is not counted. Each method's relative cost is taken as its
FLOPs relative to SimCSE's (the measured CPU ratios are in bench/results/augment/train.md).
Methods trained for ``epochs`` over training rows (NLI triplets) take their steps from
``--rows <training_data key>=<row count>`` (the ``training_rows`` rule's report gives it:
round(epochs x rows // batch)); their rows pass 3 texts (2 without hard negatives) through the
encoder. Without the count they are listed as unknown and not summed.

Usage: python bench/grid_cost.py config/paper/augment.yaml [--params 110e6] [--mfu 0.3]
       [--peak-tflops 989] [--seconds-per-step S] [--rows allnli=277000] [--out bench/results/augment/grid.md]
"""

from __future__ import annotations

import argparse
import copy
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

from clinsent.config.sections import RunConfig
from clinsent.methods.config import resolve_methods
from clinsent.methods.knobs import TrainedSettings
from clinsent.plan.experiments import Grid


def grid_cost(
    config: dict[str, Any],
    params: float,
    seconds_per_step: float | None,
    peak_tflops: float,
    mfu: float,
    rows: dict[str, int] | None = None,
) -> dict[str, Any]:
    config = copy.deepcopy(config)
    config["placeholders_ok"] = True
    parts = RunConfig.parse(config)
    entries = resolve_methods(parts)
    grid = Grid.from_config(parts, entries)
    jobs = grid.jobs
    steps = 0
    flops = 0.0
    by_objective: Counter[str] = Counter()
    unknown: Counter[str] = Counter()
    rows = rows or {}
    for method, _base, _seed in jobs:
        s = entries[method].method.settings
        if not isinstance(s, TrainedSettings) or s.steps == 0:
            continue
        source = getattr(s, "train_data", "")
        n_steps = s.steps
        if source and s.epochs is not None:  # epochs over training rows: steps from the row count
            if source not in rows:
                unknown[method] += 1
                continue
            n_steps = max(1, round(s.epochs * (rows[source] // s.batch_size)))
        views = (3 if getattr(s, "hard_negatives", True) else 2) if source else 2
        tokens = s.batch_size * s.max_length
        frozen = 2 * params * tokens if getattr(s, "instance_weighting", False) else 0.0
        step_flops = 6 * params * views * tokens + frozen  # every view through the trained encoder
        steps += n_steps
        flops += n_steps * step_flops
        by_objective[entries[method].objective] += 1
    if seconds_per_step is None:
        hours = flops / (peak_tflops * 1e12 * mfu) / 3600
    else:  # a measured plain-SimCSE step, scaled by each job's FLOPs relative to plain SimCSE's
        first = next(
            entries[m].method.settings for m, _, _ in jobs if isinstance(entries[m].method.settings, TrainedSettings)
        )
        assert isinstance(first, TrainedSettings)
        plain = 6 * params * 2 * first.batch_size * first.max_length
        hours = flops / plain * seconds_per_step / 3600
    return {
        "train_jobs": len(jobs),
        "trained_jobs": sum(by_objective.values()),
        "by_objective": dict(by_objective),
        "steps": steps,
        "pflop": round(flops / 1e15, 1),
        "gpu_hours": round(hours, 1),
        "steps_unknown": dict(unknown) or "–",
        "basis": (
            f"measured {seconds_per_step} s per plain SimCSE step"
            if seconds_per_step is not None
            else f"FLOPs at {mfu:.0%} of {peak_tflops:g} TFLOPS"
        ),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("config", type=Path)
    ap.add_argument("--params", type=float, default=110e6, help="encoder parameters (BERT-base: 110M)")
    ap.add_argument("--mfu", type=float, default=0.3)
    ap.add_argument("--peak-tflops", type=float, default=989.0)
    ap.add_argument("--seconds-per-step", type=float, default=None)
    ap.add_argument(
        "--rows", nargs="*", default=[], help="training_data key=row count (triplets), for epochs over rows"
    )
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    rows = {k: int(v) for k, v in (r.split("=", 1) for r in args.rows)}
    cost = grid_cost(
        yaml.safe_load(args.config.read_text(encoding="utf-8")),
        args.params,
        args.seconds_per_step,
        args.peak_tflops,
        args.mfu,
        rows,
    )
    lines = [f"# Grid cost of {args.config}", "", "| quantity | value |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in cost.items()]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text)


if __name__ == "__main__":
    main()
