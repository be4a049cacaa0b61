"""Snakemake script: one labelled document task from the downstream documents."""

from logging import Logger
from typing import Any

from clinsent.runner.script import run


def main(smk: Any, log: Logger) -> None:
    from clinsent.config.declare import build
    from clinsent.config.sections import DocTaskEntry
    from clinsent.corpus.doc_tasks import build_doc_task
    from clinsent.io.files import write_json, write_parquet

    needs = smk.params.needs.value  # the few-shot sizes asked of this table: checked here, first
    table, report = build_doc_task(
        smk.input.documents, build(DocTaskEntry, smk.params.task), smk.wildcards.task, needs
    )
    log.info("%d documents in %d classes (%s)", len(table), table["label"].nunique(), report["classes"])
    write_parquet(table, smk.output.table)
    write_json(report, smk.output.report)


run(snakemake, main)
