"""Snakemake script: simulate naive batches on S_ent and report duplicate-entity statistics."""

from clinsent.warm import hand_off

hand_off()  # where a warm interpreter serves (CLINSENT_WARM), the rest of this script runs in it

import pandas as pd

from clinsent.batching import candidates, duplicate_stats
from clinsent.io import write_json
from clinsent.smk import setup_logging

log = setup_logging(snakemake)  # noqa: F821
p = snakemake.params  # noqa: F821
cands = candidates(pd.read_parquet(snakemake.input.sets), pd.read_parquet(snakemake.input.linked), "s_ent")  # noqa: F821
stats = duplicate_stats(cands, p.batch_size, p.batches, seed=0)
log.info("%s", stats)
write_json(stats, snakemake.output[0])  # noqa: F821
