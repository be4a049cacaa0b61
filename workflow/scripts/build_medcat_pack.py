"""Snakemake script: term table -> MedCAT v2 model pack (T047/T048 concepts)."""

from logging import Logger
from typing import Any

from clinsent.runner.script import run


def main(smk: Any, log: Logger) -> None:
    import pandas as pd

    from clinsent.ner.cdb import build_model_pack

    pack = build_model_pack(pd.read_parquet(smk.input[0]), smk.output[0], smk.params.branch_types)
    log.info("wrote MedCAT model pack %s", pack)


run(snakemake, main)
