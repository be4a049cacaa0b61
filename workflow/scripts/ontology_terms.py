"""Snakemake script: ontology (OBO) -> term table and coverage report."""

from logging import Logger
from typing import Any

from clinsent.runner.script import run


def main(smk: Any, log: Logger) -> None:
    from clinsent.io.files import write_csv, write_parquet
    from clinsent.ontology.obo import build_term_table, coverage

    terms = build_term_table(smk.input[0], smk.params.disease_root, smk.params.mental_root)
    cov = coverage(terms)
    log.info("%d terms: %s\n%s", len(terms), terms["branch"].value_counts().to_dict(), cov.to_string(index=False))
    write_parquet(terms, smk.output.terms)
    write_csv(cov, smk.output.coverage)


run(snakemake, main)
