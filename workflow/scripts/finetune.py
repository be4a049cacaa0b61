"""Snakemake script: fine-tune one trained run on one `finetune` entry (bi-encoder), with its wall time."""
import time

from clinsent.finetune.job import job_from_params
from clinsent.io import write_json
from clinsent.smk import setup_logging

smk = snakemake  # noqa: F821
log = setup_logging(smk)
start = time.perf_counter()
result = job_from_params("bi_encoder", smk.input.model, smk.params.finetune, int(smk.wildcards.seed), smk.threads,
                         log.info)
write_json({**result, "seconds": round(time.perf_counter() - start, 4)}, smk.output[0])
