"""Snakemake script: fetch one Hugging Face model into its hub_dir folder (the only job online)."""

from logging import Logger
from typing import Any

from clinsent.runner.script import run


def main(smk: Any, log: Logger) -> None:
    from clinsent.models.download import download_hub_model

    download_hub_model(smk.params.repo_id, smk.output[0], log=log.info)


run(snakemake, main, warm=False)  # the download turns the hub on for its own process
