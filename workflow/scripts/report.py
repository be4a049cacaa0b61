"""Snakemake script: summary.csv, the results table (md/csv/tex) and the curve figure."""
from clinsent.report.build import build_report
from clinsent.smk import setup_logging

smk = snakemake  # noqa: F821
setup_logging(smk)
build_report(smk.params.jobs, smk.params.eval_sets, smk.params.methods, list(smk.input.metrics),
             list(smk.input.selections), list(smk.input.curves), dict(smk.output.items()), smk.params.title)
