"""Snakemake script: one shard of notes -> sentences (ScispaCy + pysbd, offsets into the normalised note)."""

from logging import Logger
from typing import Any

from clinsent.runner.script import run


def main(smk: Any, log: Logger) -> None:
    from clinsent.corpus.split import SentenceSplitter, split_shard

    counts = split_shard(
        smk.input[0],
        smk.output[0],
        SentenceSplitter(),
        smk.params.min_words,
        log=log.info,
        every=smk.params.progress.value.seconds,
    )  # logs only: not a param
    log.info("shard %s: %s (>= %d words kept)", smk.wildcards.shard, counts, smk.params.min_words)


run(snakemake, main)
