"""Snakemake script: fine-tune a cross-encoder from one base model on one `finetune` entry."""

from clinsent.warm import hand_off

hand_off()  # where a warm interpreter serves (CLINSENT_WARM), the rest of this script runs in it

from clinsent.gpu_slots import slot_of
from clinsent.smk import setup_logging

smk = snakemake  # noqa: F821
log = setup_logging(smk)
slot_of(smk, log.info)  # this job's GPU (CUDA_VISIBLE_DEVICES), before anything starts CUDA

from clinsent.finetune.job import job_from_params  # noqa: E402
from clinsent.io import write_json  # noqa: E402
from clinsent.models.base import resolve_model  # noqa: E402

write_json(
    job_from_params(
        "cross_encoder",
        resolve_model(smk.params.base_model),
        smk.params.finetune,
        int(smk.wildcards.seed),
        smk.threads,
        log.info,
    ),
    smk.output[0],
)
