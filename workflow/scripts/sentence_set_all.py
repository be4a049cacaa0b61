"""Snakemake script: sentence shards -> S_all (no entity stage) and its counts."""

from logging import Logger
from typing import Any

from clinsent.runner.script import run


def main(smk: Any, log: Logger) -> None:
    from clinsent.corpus.gather import gather_s_all
    from clinsent.io.files import write_json

    counts = gather_s_all(list(smk.input.sentences), smk.output.sets)
    log.info("%s", counts)
    write_json(counts, smk.output.counts)


run(snakemake, main)
