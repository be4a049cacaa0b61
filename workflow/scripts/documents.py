"""Snakemake script: whole notes as documents (pre-training and downstream partitions)."""

from logging import Logger
from typing import Any

from clinsent.runner.script import run


def main(smk: Any, log: Logger) -> None:
    from clinsent.config.declare import build
    from clinsent.config.sections import Documents
    from clinsent.corpus.documents import build_documents
    from clinsent.io.files import write_json

    stats = build_documents(
        list(smk.input),
        {"pretrain": smk.output.pretrain, "downstream": smk.output.downstream},
        build(Documents, smk.params.documents),
        log.info,
    )
    write_json(stats, smk.output.stats)


run(snakemake, main)
