"""Snakemake script: fine-tune one trained run on one `finetune` entry (bi-encoder), with its wall time."""

from logging import Logger
from typing import Any

from clinsent.runner.script import run


def main(smk: Any, log: Logger) -> None:
    import time

    from clinsent.finetune.job import job_from_params
    from clinsent.io.files import write_json

    start = time.perf_counter()
    result = job_from_params(
        "bi_encoder", smk.input.model, smk.params.finetune, int(smk.wildcards.seed), smk.threads, log.info
    )
    write_json({**result, "seconds": round(time.perf_counter() - start, 4)}, smk.output[0])


run(snakemake, main)
