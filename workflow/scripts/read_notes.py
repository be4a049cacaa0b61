"""Snakemake script: NOTEEVENTS -> notes table."""
from clinsent.corpus.notes import read_noteevents
from clinsent.io import write_parquet
from clinsent.smk import setup_logging

log = setup_logging(snakemake)  # noqa: F821
p = snakemake.params  # noqa: F821
notes = read_noteevents(snakemake.input[0], p.categories, p.drop_errors)  # noqa: F821
log.info("kept %d notes of categories %s", len(notes), p.categories)
write_parquet(notes, snakemake.output[0])  # noqa: F821
