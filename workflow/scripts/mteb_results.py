"""Snakemake script: one benchmark model's results in MTEB's format."""

from logging import Logger
from typing import Any

from clinsent.runner.script import run


def main(smk: Any, log: Logger) -> None:
    from clinsent.benchmark.mteb import write_model

    p = smk.params
    for path in write_model(p.model, p.tasks, p.metrics, smk.output[0], p.cards, log=log.info):
        log.info("wrote %s", path)


run(snakemake, main)
