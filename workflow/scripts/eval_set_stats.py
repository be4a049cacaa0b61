"""Snakemake script: one eval set's size per split, task and metric."""

from clinsent.warm import hand_off

hand_off()  # where a warm interpreter serves (CLINSENT_WARM), the rest of this script runs in it

from clinsent.io import write_json
from clinsent.smk import setup_logging
from clinsent.tasks.config import task_from_params

smk = snakemake  # noqa: F821
log = setup_logging(smk)
stats = task_from_params(smk.wildcards.eval_set, smk.params.eval_set).statistics()
log.info("eval set %s: %s", smk.wildcards.eval_set, stats["splits"])  # counts only
write_json(stats, smk.output[0])
