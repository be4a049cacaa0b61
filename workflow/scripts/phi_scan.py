"""Snakemake script: search the files meant for sharing for sampled note n-grams."""

from logging import Logger
from typing import Any

from clinsent.runner.script import run


def main(smk: Any, log: Logger) -> None:
    from clinsent.phi import check_shared

    check_shared(smk.params.results, smk.input.sample, smk.output[0], log=log.info)


run(snakemake, main)
