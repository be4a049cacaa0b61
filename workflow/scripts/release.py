"""Snakemake script: the release copies of every trained run (model files hard-linked, cards with the eval metrics)."""

from clinsent.warm import hand_off

hand_off()  # where a warm interpreter serves (CLINSENT_WARM), the rest of this script runs in it

from clinsent.smk import setup_logging

smk = snakemake  # noqa: F821
log = setup_logging(smk)

from clinsent.model_card import release_all  # noqa: E402

release_all(smk.params.runs, smk.params.card, smk.output[0])
log.info("release copies of %d runs written to %s", len(smk.params.runs), smk.output[0])
