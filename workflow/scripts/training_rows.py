"""Snakemake script: one training_data entry as distributed -> training rows (parquet) and a report."""

from clinsent.warm import hand_off

hand_off()  # where a warm interpreter serves (CLINSENT_WARM), the rest of this script runs in it

from clinsent.data.training_rows import read_training_rows
from clinsent.io import write_json, write_parquet
from clinsent.smk import setup_logging

smk = snakemake  # noqa: F821
log = setup_logging(smk)
rows, report = read_training_rows(smk.wildcards.source, smk.params.entry)
log.info("training rows %s: %s", smk.wildcards.source, report)  # counts only, never text
write_parquet(rows, smk.output.rows)
write_json(report, smk.output.report)
