"""Snakemake script: embeddings of every eval set with one selected model."""
import pyarrow.parquet as pq
import torch

from clinsent.embed import embed_sts, embeddings_table, load_model
from clinsent.evaluation.sts_data import read_eval_set
from clinsent.io import atomic_path
from clinsent.smk import setup_logging

smk = snakemake  # noqa: F821
setup_logging(smk)
torch.set_num_threads(smk.threads)  # the rule's `threads` (capped at --cores; sbatch --cpus-per-task)
model = load_model(smk.input.model)
for (name, e), out in zip(smk.params.eval_sets.items(), smk.output, strict=True):
    sts = read_eval_set(name, e)
    with atomic_path(out, ".parquet") as tmp:
        pq.write_table(embeddings_table(embed_sts(model, sts)), tmp)
