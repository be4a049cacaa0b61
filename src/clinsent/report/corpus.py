"""The corpus section of the report: MED-SE Tables 1 and 2, exact duplicates, duplicate-entity simulation."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from clinsent.io.files import write_text
from clinsent.report.kinds.corpus_stats import corpus_stats_table
from clinsent.report.tables import to_latex, to_markdown


def simulation_table(sim: dict[str, float]) -> pd.DataFrame:
    """The naive-batch simulation (MED-SE section 3.2) as a two-column table."""

    def pct(x: float) -> str:
        return f"{100.0 * x:.2f}" if x == x else "–"  # NaN when S_ent is smaller than a batch

    rows = [
        ("simulated naive batches", f"{int(sim['batches']):,}"),
        ("batch size", str(int(sim["batch_size"]))),
        ("S_ent sentences sampled from", f"{int(sim.get('sentences', 0)):,}"),
        ("batches with a duplicate entity (%)", pct(sim["share_with_duplicate"])),
        ("unique entities per batch (% of batch size)", pct(sim["mean_unique_share"])),
    ]
    return pd.DataFrame(rows, columns=["statistic", "value"])


def corpus_tables(
    table1_csv: str, table2_csv: str, duplicates_csv: str, simulation_json: str
) -> list[tuple[str, pd.DataFrame]]:
    sim = json.loads(Path(simulation_json).read_text())
    return [
        ("Table 1: statistics on medical entities (S_ent, defined entities)", pd.read_csv(table1_csv, dtype=str)),
        ("Table 2: distribution of the sentence sets", pd.read_csv(table2_csv)),
        ("Exact-duplicate sentences (copy-paste)", pd.read_csv(duplicates_csv)),
        ("Duplicate entities in naive batches (simulation on S_ent)", simulation_table(sim)),
    ]


def s_all_table(counts_json: str) -> pd.DataFrame:
    """S_all gathered without the entity stage: sentences split, kept, and exact duplicates among the kept."""
    counts = json.loads(Path(counts_json).read_text())
    dup = counts["exact_duplicates"]["s_all"]
    rows = [
        ("sentences split", f"{counts['counts']['sentences']:,}"),
        ("kept (S_all)", f"{counts['counts']['s_all']:,}"),
        ("unique texts in S_all", f"{dup['unique']:,}"),
        ("exact duplicates in S_all", f"{dup['exact_duplicates']:,}"),
    ]
    return pd.DataFrame(rows, columns=["statistic", "value"])


def write_corpus_report(
    notes: list[str] | None, sentence_corpora: dict[str, str], out_md: str, out_tex: str, s_all: str | None = None
) -> None:
    """``notes``: the notes pipeline's table1, table2, exact duplicates and simulation files (None without notes
    or without the entity stage); ``s_all``: S_all's counts where no method needs entities;
    ``sentence_corpora``: name -> its stats.json."""
    tables = corpus_tables(*notes) if notes else []
    if s_all:
        tables.append(("The notes' sentences (S_all; no method needs entities, so no NER ran)", s_all_table(s_all)))
    if sentence_corpora:
        table = corpus_stats_table({"corpora": list(sentence_corpora)}, sentence_corpora)
        tables.append(("Sentence corpora (whitespace words)", table))
    write_text("\n".join(to_markdown(df, title) for title, df in tables), out_md)
    write_text("\n".join(to_latex(df, title) for title, df in tables), out_tex)
