"""``python -m clinsent.plan --summary CONFIG``: the job counts by rule, without Snakemake."""

from __future__ import annotations

import argparse
import sys

from clinsent.errors import InputError
from clinsent.plan.checks import build_plan
from clinsent.plan.config import load_config
from clinsent.plan.jobs import job_counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m clinsent.plan", description="Plan a config without Snakemake.")
    parser.add_argument("config", help="a config file (e.g. config/paper/medse.yaml)")
    parser.add_argument("--summary", action="store_true", help="print the job counts by rule (the default)")
    parser.add_argument(
        "--placeholders-ok",
        action="store_true",
        help="leave missing user files out, as `--config placeholders_ok=true` does",
    )
    args = parser.parse_args(argv)
    try:
        plan = build_plan(load_config(args.config, {"placeholders_ok": True} if args.placeholders_ok else {}))
    except (InputError, ValueError) as exc:
        print(exc, file=sys.stderr)
        return 1
    counts = job_counts(plan)
    width = max(map(len, counts))
    for rule, n in counts.items():
        print(f"{rule:<{width}}  {n:>6}")
    print(f"{'total':<{width}}  {sum(counts.values()):>6}")
    return 0
