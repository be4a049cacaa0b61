"""Snakemake script: embeddings of one eval set with one selected model."""
import pyarrow.parquet as pq

from clinsent.embed import embed_sts, embeddings_table, load_model
from clinsent.evaluation.sts_data import read_sts
from clinsent.io import atomic_path
from clinsent.smk import setup_logging

smk = snakemake  # noqa: F821
setup_logging(smk)
e = smk.params.eval_set
sts = read_sts(smk.wildcards.eval_set, e["path"], e["format"], e.get("gold"), e.get("scale_max", 5.0))
table = embeddings_table(embed_sts(load_model(smk.input.model), sts))
with atomic_path(smk.output[0], ".parquet") as tmp:
    pq.write_table(table, tmp)
