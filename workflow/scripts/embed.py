"""Snakemake script: embeddings of one eval set's texts with one selected model (and the encoding time)."""

from clinsent.warm import hand_off

hand_off()  # where a warm interpreter serves (CLINSENT_WARM), the rest of this script runs in it

from clinsent.gpu_slots import slot_of
from clinsent.smk import setup_logging

smk = snakemake  # noqa: F821
log = setup_logging(smk)
slot_of(smk, log.info)  # this job's GPU (CUDA_VISIBLE_DEVICES), before anything starts CUDA

import time  # noqa: E402

import pyarrow.parquet as pq  # noqa: E402
import torch  # noqa: E402

from clinsent.embed import embed_texts, embeddings_table, load_encoder  # noqa: E402
from clinsent.io import atomic_path  # noqa: E402
from clinsent.tasks.config import task_from_params  # noqa: E402

torch.set_num_threads(smk.threads)  # the rule's `threads` (capped at --cores; sbatch --cpus-per-task)
task = task_from_params(smk.wildcards.eval_set, smk.params.eval_set)
texts, model = task.texts(), load_encoder(smk.input.model)
start = time.perf_counter()
rows = embed_texts(model, texts)
with atomic_path(smk.output[0], ".parquet") as tmp:
    pq.write_table(embeddings_table(rows, time.perf_counter() - start), tmp)
