"""Snakemake script: fetch one Hugging Face model into its hub_dir folder (the only job online)."""

from clinsent.models.download import download_hub_model
from clinsent.smk import setup_logging

smk = snakemake  # noqa: F821
log = setup_logging(smk)
download_hub_model(smk.params.repo_id, smk.output[0], log=log.info)
