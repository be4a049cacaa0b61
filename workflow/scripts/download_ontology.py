"""Snakemake script: download the pinned ontology release and check its sha256."""

from logging import Logger
from typing import Any

from clinsent.runner.script import run


def main(smk: Any, log: Logger) -> None:
    from clinsent.ontology.download import download_release

    download_release(smk.params.url, smk.output[0], smk.params.sha256)


run(snakemake, main, warm=False)  # the download turns the hub on for its own process
