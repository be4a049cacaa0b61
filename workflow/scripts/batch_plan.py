"""Snakemake script: sentence sets -> batch plan of one method and seed."""
import pandas as pd

from clinsent.batching import candidates, plan_batches
from clinsent.io import write_parquet
from clinsent.smk import setup_logging

log = setup_logging(snakemake)  # noqa: F821
p = snakemake.params.plan  # noqa: F821
cands = candidates(pd.read_parquet(snakemake.input.sets), pd.read_parquet(snakemake.input.linked), p["corpus"])  # noqa: F821
plan = plan_batches(cands, p["duplicates"], p["batch_size"], p["steps"], int(snakemake.wildcards.seed))  # noqa: F821
log.info("plan: %d steps, %d rows from %d candidate sentences", p["steps"], len(plan), len(cands))
write_parquet(plan, snakemake.output[0])  # noqa: F821
