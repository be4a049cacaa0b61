"""Snakemake script: MED-SE Tables 1 and 2 for this corpus, and the exact-duplicate counts."""

from logging import Logger
from typing import Any

from clinsent.runner.script import run


def main(smk: Any, log: Logger) -> None:
    import json

    import pandas as pd

    from clinsent.corpus.sets import exact_duplicates_table, table1, table2
    from clinsent.io.files import write_csv

    inp, out = smk.input, smk.output
    counts = json.loads(open(inp.counts).read())
    sets = pd.read_parquet(inp.sets, columns=["sent_id", "set", "n_defined"])
    linked = pd.read_parquet(inp.linked, columns=["sent_id", "term_id", "definition"])
    write_csv(table1(sets, linked, smk.params.top_fraction), out.table1)
    write_csv(table2(counts["counts"]), out.table2)
    write_csv(exact_duplicates_table(counts["exact_duplicates"]), out.duplicates)


run(snakemake, main)
