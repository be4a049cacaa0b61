"""Snakemake script: the release copies of every trained run (model files hard-linked, cards with the eval metrics)."""

from logging import Logger
from typing import Any

from clinsent.runner.script import run


def main(smk: Any, log: Logger) -> None:
    from clinsent.config.declare import build
    from clinsent.config.sections import ModelCard
    from clinsent.release.copies import release_all

    release_all(smk.params.runs, build(ModelCard, smk.params.card), smk.output[0])
    log.info("release copies of %d runs written to %s", len(smk.params.runs), smk.output[0])


run(snakemake, main)
