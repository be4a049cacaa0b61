"""Dump what Snakemake plans for each config: the prepared config and every job of a run from
scratch (its rule, wildcards, inputs, outputs and their flags, log, benchmark, params and resources), read from
Snakemake's own DAG, not from :mod:`clinsent.plan`, so a refactor of the planner or of the rules
is checked from outside both.

    python bench/dag_dump.py OUT_DIR [CONFIG ...] [--set KEY=VALUE ...]

writes ``OUT_DIR/<config stem>.json`` for each config (every config under ``config/`` by
default; ``--set`` overrides a top-level key, e.g. ``results=/tmp/r``); ``diff -r`` two such
folders to see what a change moved. Run from the repository root; dry run only (nothing is
written under the results folders but the raw inputs' key files, ``inputs/``).
``tests/plan/test_plan.py`` checks the plan's own jobs (:mod:`clinsent.plan.jobs`) against these
dumps.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
CONFIGS = [
    *sorted((REPO / "config").glob("*.yaml")),
    *sorted((REPO / "config" / "paper").glob("*.yaml")),
]
NOT_CONFIGS = {"schema.yaml", "icd9_triage.yaml"}  # the schema; a side file of doc_tasks


def _plain(value: Any) -> Any:
    """A JSON-able copy of a job's param, input or config value (sets sorted, paths as strings)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, set | frozenset):
        return sorted(_plain(v) for v in value)
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    return str(value)


def _named(items: Any) -> dict[str, Any]:
    """A Snakemake named list: its items in order and its names."""
    return {"all": _plain(list(items)), "named": {str(k): _plain(v) for k, v in items.items()}}


def _job_key(job: dict[str, Any]) -> str:
    return json.dumps([job["rule"], job["wildcards"], job["output"]], sort_keys=True)


def dump(config: Path, overrides: dict[str, str] | None = None) -> dict[str, Any]:
    from snakemake.api import SnakemakeApi
    from snakemake.settings.types import ConfigSettings, DAGSettings, OutputSettings, ResourceSettings
    from snakemake.workflow import Workflow

    found: dict[str, Any] = {}

    def collect(self: Workflow) -> None:
        self._prepare_dag(forceall=True, ignore_incomplete=True, lock_warn_only=True)
        self._build_dag()
        jobs = []
        for job in self.dag.jobs:
            jobs.append(
                {
                    "rule": job.rule.name,
                    "wildcards": _plain(dict(job.wildcards_dict)),
                    "input": _named(job.input),
                    "output": _named(job.output),
                    # directory, temp, report (and its caption and category), ...: how each output is made and shown
                    "flags": {str(f): _plain(getattr(f, "flags", {})) for f in job.output},
                    "log": _named(job.log),
                    "benchmark": str(job.benchmark) if job.benchmark else None,
                    "params": _named(job.params),
                    "resources": {
                        k: _plain(v)
                        for k, v in job.resources.items()
                        if k not in ("_cores", "_nodes", "tmpdir", "mem_mib", "disk_mib", "mem_mb", "disk_mb")
                    },
                }
            )
        found["config"] = _plain(self.config)
        found["jobs"] = sorted(jobs, key=_job_key)

    Workflow.printdag = collect
    with SnakemakeApi(OutputSettings(quiet={"all"})) as api:
        workflow = api.workflow(
            ResourceSettings(cores=1),
            ConfigSettings(configfiles=[config], config={"placeholders_ok": True, **(overrides or {})}),
            snakefile=REPO / "Snakefile",
            workdir=REPO,
        )
        workflow.dag(DAGSettings(targets={"all"}, forceall=True)).printdag()
    return found


def main(argv: list[str]) -> None:
    from clinsent.io.files import write_text  # the guarded writer: whole or absent, never over an input

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("configs", nargs="*", type=Path)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", dest="overrides")
    args = parser.parse_args(argv)
    overrides = dict(o.split("=", 1) for o in args.overrides)
    args.out.mkdir(parents=True, exist_ok=True)
    configs = [c.resolve() for c in args.configs] or [c for c in CONFIGS if c.name not in NOT_CONFIGS]
    for config in configs:
        result = dump(config, overrides)
        write_text(json.dumps(result, indent=1, sort_keys=True) + "\n", args.out / f"{config.stem}.json")
        print(f"{config}: {len(result['jobs'])} jobs", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
