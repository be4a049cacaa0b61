"""``python -m clinsent plan CONFIG``: the job counts by rule of a config's run from scratch, what
``snakemake -n`` lists, without Snakemake (the plan through the door: :func:`clinsent.door.open.open_plan`)."""

from __future__ import annotations

import sys

from clinsent.door.open import open_plan
from clinsent.errors import CommandParser, InputError
from clinsent.plan.jobs import job_counts


def main(argv: list[str] | None = None) -> int:
    parser = CommandParser(prog="python -m clinsent plan", description="Plan a config without Snakemake.")
    parser.add_argument("config", help="a config file (e.g. config/paper/medse.yaml)")
    parser.add_argument(
        "--placeholders-ok",
        action="store_true",
        help="leave missing user files out, as `--config placeholders_ok=true` does",
    )
    args = parser.parse_args(argv)
    try:
        plan = open_plan(args.config, {"placeholders_ok": True} if args.placeholders_ok else {})
    except (InputError, ValueError) as exc:  # a refusal: one line, exit 2, as every command's
        print(f"plan: {exc}", file=sys.stderr)
        return 2
    counts = job_counts(plan)
    width = max(map(len, counts))
    for rule, n in counts.items():
        print(f"{rule:<{width}}  {n:>6}")
    print(f"{'total':<{width}}  {sum(counts.values()):>6}")
    return 0
