"""Snakemake script: summary.csv, the results table (md/csv/tex), the curve figure and the corpus tables."""

from logging import Logger
from typing import Any

from clinsent.runner.script import run


def main(smk: Any, log: Logger) -> None:
    from clinsent.io.files import write_json
    from clinsent.report.build import build_report
    from clinsent.report.captions import RunFacts
    from clinsent.report.corpus import write_corpus_report
    from clinsent.report.run_record import record

    p, inp, out = smk.params, smk.input, smk.output
    build_report(
        p.jobs,
        p.evaluations,
        p.eval_sets,
        p.methods,
        list(inp.metrics),
        list(inp.selections),
        list(inp.curves),
        dict(out.items()),
        p.title,
        RunFacts.from_params(p.facts),
    )
    notes = (
        [inp.table1, inp.table2, inp.exact_duplicates, inp.duplicate_simulation] if "table1" in inp.keys() else None
    )
    write_corpus_report(
        notes,
        dict(zip(p.sentence_corpora, inp.sentence_corpora, strict=True)),
        out.corpus_md,
        out.corpus_tex,
        s_all=inp.s_all_counts if "s_all_counts" in inp.keys() else None,
    )
    write_json(record(p.fingerprint, p.configfiles), out.run)


run(snakemake, main)
