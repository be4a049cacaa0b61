"""Snakemake script: one eval set's size per split, task and metric."""

from logging import Logger
from typing import Any

from clinsent.runner.script import run


def main(smk: Any, log: Logger) -> None:
    from clinsent.io.files import write_json
    from clinsent.tasks.config import task_from_params

    stats = task_from_params(smk.wildcards.eval_set, smk.params.eval_set).statistics()
    log.info("eval set %s: %s", smk.wildcards.eval_set, stats["splits"])  # counts only
    write_json(stats, smk.output[0])


run(snakemake, main)
