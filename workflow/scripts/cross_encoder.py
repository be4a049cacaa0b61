"""Snakemake script: fine-tune a cross-encoder from one base model on one `finetune` entry."""

from logging import Logger
from typing import Any

from clinsent.runner.script import run


def main(smk: Any, log: Logger) -> None:
    from clinsent.finetune.job import job_from_params
    from clinsent.io.files import write_json
    from clinsent.models.base import resolve_model

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


run(snakemake, main)
