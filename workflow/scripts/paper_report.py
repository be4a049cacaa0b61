"""Snakemake script: the paper's tables, their training curves and its figures."""

from logging import Logger
from typing import Any

from clinsent.runner.script import run


def main(smk: Any, log: Logger) -> None:
    from clinsent.report.build import build_paper_report
    from clinsent.report.captions import RunFacts

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


run(snakemake, main)
