"""Snakemake script: whole notes as documents (pre-training and downstream partitions)."""

from logging import Logger
from typing import Any

from clinsent.script import run


def main(smk: Any, log: Logger) -> None:
    from clinsent.corpus.documents import DocumentSettings, build_documents
    from clinsent.io import write_json

    stats = build_documents(
        list(smk.input),
        {"pretrain": smk.output.pretrain, "downstream": smk.output.downstream},
        DocumentSettings.from_config(smk.params.documents),
        log.info,
    )
    write_json(stats, smk.output.stats)


run(snakemake, main)
