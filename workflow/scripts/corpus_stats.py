"""Snakemake script: MED-SE Tables 1 and 2 for this corpus."""
import pandas as pd

from clinsent.io import write_csv, write_text
from clinsent.report.tables import to_markdown
from clinsent.sets import table1, table2
from clinsent.smk import setup_logging

setup_logging(snakemake)  # noqa: F821
inp, out = snakemake.input, snakemake.output  # noqa: F821
sets, linked = pd.read_parquet(inp.sets), pd.read_parquet(inp.linked)
t1 = table1(sets, linked, snakemake.params.top_fraction)  # noqa: F821
t2 = table2(pd.read_parquet(inp.sentences, columns=["sent_id"]), sets)
write_csv(t1, out.table1)
write_csv(t2, out.table2)
write_text(to_markdown(t1, "Table 1: statistics on medical entities (S_ent, defined entities)") + "\n"
           + to_markdown(t2, "Table 2: distribution of the sentence sets"), out.markdown)
