"""Snakemake script: term table -> MedCAT v2 model pack (T047/T048 concepts)."""

from clinsent.warm import hand_off

hand_off()  # where a warm interpreter serves (CLINSENT_WARM), the rest of this script runs in it

import pandas as pd

from clinsent.ner.cdb import build_model_pack
from clinsent.smk import setup_logging

log = setup_logging(snakemake)  # noqa: F821
pack = build_model_pack(pd.read_parquet(snakemake.input[0]), snakemake.output[0], snakemake.params.branch_types)  # noqa: F821
log.info("wrote MedCAT model pack %s", pack)
