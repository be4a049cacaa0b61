"""Snakemake script: one benchmark model's results in MTEB's format."""

from clinsent.warm import hand_off

hand_off()  # where a warm interpreter serves (CLINSENT_WARM), the rest of this script runs in it

from clinsent.benchmark.mteb import write_model
from clinsent.smk import setup_logging

smk = snakemake  # noqa: F821
log = setup_logging(smk)
for path in write_model(smk.params.model, smk.params.tasks, smk.params.metrics, smk.output[0], smk.params.cards):
    log.info("wrote %s", path)
