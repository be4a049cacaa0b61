"""Snakemake script: the user's MedCAT pack -> a copy restricted to the kept UMLS types."""

from logging import Logger
from typing import Any

from clinsent.runner.script import run


def main(smk: Any, log: Logger) -> None:
    from clinsent.io.files import write_json
    from clinsent.ner.pack import slim_pack

    stats = slim_pack(smk.input[0], smk.params.type_ids, smk.output.pack)
    log.info("slim pack: %s", stats)
    write_json(stats, smk.output.stats)


run(snakemake, main)
