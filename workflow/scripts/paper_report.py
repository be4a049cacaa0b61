"""Snakemake script: the paper's tables, their training curves and Figure 2."""
from pathlib import Path

from clinsent.report.build import build_paper_report
from clinsent.smk import setup_logging

smk = snakemake  # noqa: F821
setup_logging(smk)
R = Path(smk.input.summary).parent
build_paper_report(smk.input.summary, smk.params.jobs, list(smk.input.curves), smk.params.tables, smk.params.figures,
                   smk.params.eval_sets, smk.params.default_base, smk.params.paper_label,
                   str(R / "tables" / "paper"), str(R / "figures" / "paper"))
