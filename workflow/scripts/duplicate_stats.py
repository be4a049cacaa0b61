"""Snakemake script: simulate naive batches on S_ent and report duplicate-entity statistics."""

from logging import Logger
from typing import Any

from clinsent.runner.script import run


def main(smk: Any, log: Logger) -> None:
    import pandas as pd

    from clinsent.data.batching import candidates, duplicate_stats
    from clinsent.io.files import write_json

    p = smk.params
    cands = candidates(pd.read_parquet(smk.input.sets), pd.read_parquet(smk.input.linked), "s_ent")
    stats = duplicate_stats(cands, p.batch_size, p.batches, seed=0)
    log.info("%s", stats)
    write_json(stats, smk.output[0])


run(snakemake, main)
