"""Snakemake script: sentences + entities + terms -> linked entities and sentence sets."""
import pandas as pd

from clinsent.io import write_parquet
from clinsent.sets import assign_sets, link_entities
from clinsent.smk import setup_logging

log = setup_logging(snakemake)  # noqa: F821
inp = snakemake.input  # noqa: F821
linked = link_entities(pd.read_parquet(inp.entities), pd.read_parquet(inp.terms), snakemake.params.link_by)  # noqa: F821
sets = assign_sets(pd.read_parquet(inp.sentences), linked)
log.info("sets: %s; entities linked by %s", sets["set"].value_counts().to_dict(), linked["linked_by"].value_counts().to_dict())
write_parquet(linked, snakemake.output.linked)  # noqa: F821
write_parquet(sets, snakemake.output.sets)  # noqa: F821
