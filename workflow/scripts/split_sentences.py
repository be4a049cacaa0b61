"""Snakemake script: one shard of notes -> sentences (ScispaCy + pysbd, offsets into the normalised note)."""

from clinsent.warm import hand_off

hand_off()  # where a warm interpreter serves (CLINSENT_WARM), the rest of this script runs in it

from clinsent.corpus.split import SentenceSplitter, split_shard
from clinsent.smk import setup_logging

smk = snakemake  # noqa: F821
log = setup_logging(smk)
counts = split_shard(
    smk.input[0],
    smk.output[0],
    SentenceSplitter(),
    smk.params.min_words,
    log=log.info,
    every=smk.config.get("progress", {}).get("seconds", 30),
)  # logs only: not a param
log.info("shard %s: %s (>= %d words kept)", smk.wildcards.shard, counts, smk.params.min_words)
