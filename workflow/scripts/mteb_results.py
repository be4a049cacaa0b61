"""Snakemake script: one benchmark model's results in MTEB's format."""
from clinsent.benchmark.mteb import write_model
from clinsent.smk import setup_logging

smk = snakemake  # noqa: F821
log = setup_logging(smk)
for path in write_model(smk.params.model, smk.params.tasks, smk.params.metrics, smk.output[0],
                        smk.params.cards):
    log.info("wrote %s", path)
