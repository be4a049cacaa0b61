"""Snakemake script: summary.csv, the results table (md/csv/tex), the curve figure and the corpus tables."""
from clinsent.report.build import build_report
from clinsent.report.corpus import write_corpus_report
from clinsent.smk import setup_logging

smk = snakemake  # noqa: F821
setup_logging(smk)
build_report(smk.params.jobs, smk.params.eval_sets, smk.params.methods, list(smk.input.metrics),
             list(smk.input.selections), list(smk.input.curves), dict(smk.output.items()), smk.params.title)
inp, out = smk.input, smk.output
write_corpus_report(inp.table1, inp.table2, inp.exact_duplicates, inp.duplicate_simulation, out.corpus_md, out.corpus_tex)
