"""Snakemake script: sentence and entity shards + terms -> linked entities, sentence sets, counts."""

from logging import Logger
from typing import Any

from clinsent.runner.script import run


def main(smk: Any, log: Logger) -> None:
    import pandas as pd

    from clinsent.corpus.gather import gather_sets
    from clinsent.io.files import write_json

    inp, out = smk.input, smk.output
    counts = gather_sets(
        list(inp.sentences), list(inp.entities), pd.read_parquet(inp.terms), smk.params.link_by, out.sets, out.linked
    )
    log.info("%s", counts)
    write_json(counts, out.counts)


run(snakemake, main)
