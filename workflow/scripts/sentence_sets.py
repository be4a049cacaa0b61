"""Snakemake script: sentence and entity shards + terms -> linked entities, sentence sets, counts."""

from clinsent.warm import hand_off

hand_off()  # where a warm interpreter serves (CLINSENT_WARM), the rest of this script runs in it

import pandas as pd

from clinsent.corpus.gather import gather_sets
from clinsent.io import write_json
from clinsent.smk import setup_logging

smk = snakemake  # noqa: F821
log = setup_logging(smk)
inp, out = smk.input, smk.output
counts = gather_sets(
    list(inp.sentences), list(inp.entities), pd.read_parquet(inp.terms), smk.params.link_by, out.sets, out.linked
)
log.info("%s", counts)
write_json(counts, out.counts)
