"""Snakemake script: the paper's tables, their training curves and its figures."""

from clinsent.warm import hand_off

hand_off()  # where a warm interpreter serves (CLINSENT_WARM), the rest of this script runs in it

from clinsent.report.build import build_paper_report
from clinsent.report.captions import RunFacts
from clinsent.smk import setup_logging

smk = snakemake  # noqa: F821
setup_logging(smk)
p = smk.params
build_paper_report(
    smk.input.summary,
    p.jobs,
    list(smk.input.curves),
    p.tables,
    p.figures,
    p.eval_sets,
    p.default_base,
    p.paper_label,
    p.tables_dir,
    p.figures_dir,
    p.extras,
    p.curve_tables,
    smk.input.replicates,
    RunFacts.from_params(p.facts),
)
