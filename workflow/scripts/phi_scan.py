"""Snakemake script: search the files meant for sharing for sampled note n-grams."""

from clinsent.warm import hand_off

hand_off()  # where a warm interpreter serves (CLINSENT_WARM), the rest of this script runs in it

from clinsent.phi import check_shared
from clinsent.smk import setup_logging

smk = snakemake  # noqa: F821
log = setup_logging(smk)
check_shared(smk.params.results, smk.input.sample, smk.output[0], log=log.info)
