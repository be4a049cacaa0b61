"""Snakemake script: one shard's kept sentences -> MedCAT entities (character offsets, CUI, type)."""

from logging import Logger
from typing import Any

from clinsent.runner.script import run


def main(smk: Any, log: Logger) -> None:
    from clinsent.ner.annotate import MedCATAnnotator, annotate_shard

    counts = annotate_shard(
        smk.input.sentences,
        smk.output[0],
        MedCATAnnotator(smk.input.pack, smk.params.type_ids),
        log=log.info,
        every=smk.params.progress.value.seconds,
    )  # not a param
    log.info("shard %s: %s", smk.wildcards.shard, counts)


run(snakemake, main)
