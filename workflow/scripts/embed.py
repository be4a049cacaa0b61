"""Snakemake script: embeddings of one eval set's texts with one selected model (and the encoding time)."""

from logging import Logger
from typing import Any

from clinsent.runner.script import run


def main(smk: Any, log: Logger) -> None:
    import time

    import pyarrow.parquet as pq
    import torch

    from clinsent.embedding.vectors import embed_texts, embeddings_table, load_encoder
    from clinsent.io.files import atomic_path
    from clinsent.tasks.config import task_from_params

    torch.set_num_threads(smk.threads)  # the rule's `threads` (capped at --cores; sbatch --cpus-per-task)
    task = task_from_params(smk.wildcards.eval_set, smk.params.eval_set)
    texts, model = task.texts(), load_encoder(smk.input.model)
    start = time.perf_counter()
    rows = embed_texts(model, texts)
    with atomic_path(smk.output[0], ".parquet") as tmp:
        pq.write_table(embeddings_table(rows, time.perf_counter() - start), tmp)


run(snakemake, main)
