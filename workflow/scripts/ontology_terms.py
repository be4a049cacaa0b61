"""Snakemake script: ontology (OBO) -> term table and coverage report."""

from clinsent.warm import hand_off

hand_off()  # where a warm interpreter serves (CLINSENT_WARM), the rest of this script runs in it

from clinsent.io import write_csv, write_parquet
from clinsent.ontology.obo import build_term_table, coverage
from clinsent.smk import setup_logging

smk = snakemake  # noqa: F821
log = setup_logging(smk)
terms = build_term_table(smk.input[0], smk.params.disease_root, smk.params.mental_root)
cov = coverage(terms)
log.info("%d terms: %s\n%s", len(terms), terms["branch"].value_counts().to_dict(), cov.to_string(index=False))
write_parquet(terms, smk.output.terms)
write_csv(cov, smk.output.coverage)
