"""``snakemake --report`` over finished work only.

Snakemake builds its HTML report from whatever outputs stand, stale or not: after an input
changed, ``--report`` said "Report created." with the old metrics while a dry run listed the jobs
that would replace them. So the report's DAG is checked once it is built: where any job would run
(an input changed, an output is missing, a param changed), ``--report`` stops in one line, exit 1,
naming how many jobs are pending and of which rules, and writes nothing; a finished run's report is
made as before.

Snakemake has no hook between building the report's DAG and writing the report; its
``Workflow.create_report`` builds the DAG with ``_build_dag`` and then reports. So this workflow's
``create_report`` checks the DAG the moment ``_build_dag`` has built it, and the report is made by
Snakemake's own code. A Snakemake without those two methods reports unchecked and says so, once.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable
from typing import Any

from clinsent.errors import InputError
from clinsent.runner.smk import config_error

RUN = "snakemake --cores 1 --resources gpu=1 all"


def pending(dag: Any) -> Counter[str]:
    """The jobs ``dag`` would run, by rule: those with outputs (a target rule without any, as
    ``all``, is never work of its own)."""
    return Counter(job.rule.name for job in dag.needrun_jobs() if len(job.output))


def check_finished(dag: Any) -> None:
    """Stop (:class:`InputError`) where ``dag`` has pending jobs."""
    jobs = pending(dag)
    if jobs:
        n = sum(jobs.values())
        rules = ", ".join(f"{rule} {count}" for rule, count in sorted(jobs.items()))
        raise InputError(
            "--report",
            f"{n} job{'s are' if n != 1 else ' is'} pending ({rules}): the report would show outputs "
            "they will replace; nothing was written",
            f"run the workflow first (`{RUN}`, with the same config), then make the report",
        )


def refuse_report_over_pending(workflow: Any, say: Callable[[str], Any] | None = None) -> bool:
    """Make ``workflow``'s ``--report`` refuse pending work (see the module). Returns whether the
    check is in place."""
    create: Callable[..., Any] | None = getattr(workflow, "create_report", None)
    build: Callable[[], Any] | None = getattr(workflow, "_build_dag", None)
    if create is None or build is None:
        (say or (lambda line: print(line, file=sys.stderr)))(
            "note: this Snakemake lacks the hook the report's check needs: `--report` is made without "
            "checking that no job is pending (run a dry run first)"
        )
        return False

    def checked_build() -> None:
        build()
        try:
            check_finished(workflow.dag)
        except InputError as exc:
            config_error(exc)

    def create_report(*args: Any, **kwargs: Any) -> Any:
        workflow._build_dag = checked_build
        try:
            return create(*args, **kwargs)
        finally:
            del workflow._build_dag  # Snakemake's own again

    workflow.create_report = create_report
    return True
