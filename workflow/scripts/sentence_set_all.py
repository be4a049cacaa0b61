"""Snakemake script: sentence shards -> S_all (no entity stage) and its counts."""

from clinsent.warm import hand_off

hand_off()  # where a warm interpreter serves (CLINSENT_WARM), the rest of this script runs in it

from clinsent.corpus.gather import gather_s_all
from clinsent.io import write_json
from clinsent.smk import setup_logging

smk = snakemake  # noqa: F821
log = setup_logging(smk)
counts = gather_s_all(list(smk.input.sentences), smk.output.sets)
log.info("%s", counts)
write_json(counts, smk.output.counts)
