"""Snakemake script: one training_data entry as distributed -> training rows (parquet) and a report."""

from logging import Logger
from typing import Any

from clinsent.runner.script import run


def main(smk: Any, log: Logger) -> None:
    from clinsent.data.training_rows import read_training_rows
    from clinsent.io.files import write_json, write_parquet

    rows, report = read_training_rows(smk.wildcards.source, smk.params.entry)
    log.info("training rows %s: %s", smk.wildcards.source, report)  # counts only, never text
    write_parquet(rows, smk.output.rows)
    write_json(report, smk.output.report)


run(snakemake, main)
