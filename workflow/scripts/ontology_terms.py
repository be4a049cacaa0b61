"""Snakemake script: ontology (OBO) -> term table."""
from clinsent.io import write_parquet
from clinsent.ontology.obo import build_term_table
from clinsent.smk import setup_logging

log = setup_logging(snakemake)  # noqa: F821
p = snakemake.params  # noqa: F821
terms = build_term_table(snakemake.input[0], p.disease_root, p.mental_root)  # noqa: F821
log.info("%d terms: %s", len(terms), terms["branch"].value_counts().to_dict())
write_parquet(terms, snakemake.output[0])  # noqa: F821
