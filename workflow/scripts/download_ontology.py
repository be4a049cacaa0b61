"""Snakemake script: download the pinned ontology release and check its sha256."""

from clinsent.ontology.download import download_release
from clinsent.smk import setup_logging

smk = snakemake  # noqa: F821
setup_logging(smk)
download_release(smk.params.url, smk.output[0], smk.params.sha256)
