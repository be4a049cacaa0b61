"""Snakemake script: a trained run's release copy (its model files hard-linked, the card with the eval metrics)."""

from clinsent.warm import hand_off

hand_off()  # where a warm interpreter serves (CLINSENT_WARM), the rest of this script runs in it

from clinsent.smk import setup_logging

smk = snakemake  # noqa: F821
log = setup_logging(smk)

from clinsent.model_card import release  # noqa: E402

release(
    smk.input.model,
    smk.input.selection,
    smk.input.curve,
    dict(zip(smk.params.eval_sets, smk.input.metrics)),
    smk.params.headlines,
    smk.params.base_model,
    smk.params.card,
    smk.output[0],
)
log.info("release copy written to %s", smk.output[0])
