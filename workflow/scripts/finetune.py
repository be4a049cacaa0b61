"""Snakemake script: fine-tune one trained run on one `finetune` entry (bi-encoder), with its wall time."""

from clinsent.warm import hand_off

hand_off()  # where a warm interpreter serves (CLINSENT_WARM), the rest of this script runs in it

from clinsent.gpu_slots import slot_of
from clinsent.smk import setup_logging

smk = snakemake  # noqa: F821
log = setup_logging(smk)
slot_of(smk, log.info)  # this job's GPU (CUDA_VISIBLE_DEVICES), before anything starts CUDA

import time  # noqa: E402

from clinsent.finetune.job import job_from_params  # noqa: E402
from clinsent.io import write_json  # noqa: E402

start = time.perf_counter()
result = job_from_params(
    "bi_encoder", smk.input.model, smk.params.finetune, int(smk.wildcards.seed), smk.threads, log.info
)
write_json({**result, "seconds": round(time.perf_counter() - start, 4)}, smk.output[0])
