"""Snakemake script: one labelled document task from the downstream documents."""

from logging import Logger
from typing import Any

from clinsent.script import run


def main(smk: Any, log: Logger) -> None:
    from clinsent.corpus.doc_tasks import DocTaskSettings, build_doc_task, per_class_needs
    from clinsent.io import write_json, write_parquet
    from clinsent.run_config import RunConfig

    # the few-shot sizes asked of this table: checked here, first; not params (they do not change the table)
    needs = per_class_needs(RunConfig.parse(smk.config), smk.output.table)
    table, report = build_doc_task(
        smk.input.documents, DocTaskSettings.from_config(smk.params.task), smk.wildcards.task, needs
    )
    log.info("%d documents in %d classes (%s)", len(table), table["label"].nunique(), report["classes"])
    write_parquet(table, smk.output.table)
    write_json(report, smk.output.report)


run(snakemake, main)
