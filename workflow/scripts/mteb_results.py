"""Snakemake script: one benchmark model's results in MTEB's format."""

from logging import Logger
from typing import Any

from clinsent.workflow.script import run


def main(smk: Any, log: Logger) -> None:
    from clinsent.benchmark.mteb import write_model

    for path in write_model(smk.params.model, smk.params.tasks, smk.params.metrics, smk.output[0], smk.params.cards):
        log.info("wrote %s", path)


run(snakemake, main)
