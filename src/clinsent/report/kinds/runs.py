"""Runs tables (the default kind): rows citing runs, a column per eval set (or per eval set and
metric), mean ± std over seeds beside the paper's numbers, and a figure of the runs' training
curves. Each row's `cells` cite one run per column group (`method` or `method@base_model`, `null`
for an empty cell; `cross_encoder@<base>` a cross-encoder), `paper` the paper's numbers per column
group, one string per eval set. A metric ending in `_p` (a p-value) is shown in scientific
notation, unscaled. With tables or figures, the job grid is exactly the cited runs.

``transpose`` renders rows as columns (MED-SE Table 6's layout). ``eval_sets`` restricts and
orders the eval sets a table shows; ``average`` adds their mean (per seed, then mean ± std over
seeds: the augmentation paper's "Avg."); ``percent`` shows 100 x the metric to two decimals (that
paper's layout); ``metrics`` shows these metrics of each eval set instead of its headline (the
clinical NLI study's accuracy, precision, recall, F1; Pearson and its p-value)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from clinsent.config.declare import knob
from clinsent.errors import InputError
from clinsent.report.cells import MISSING, average_values, cell_values
from clinsent.report.kinds.base import PAPER_DOC, TABLE_KINDS, PaperCells, ReportContext, TableKind, eval_set_names
from clinsent.report.tables import fmt_mean_std
from clinsent.run_ref import split_run

if TYPE_CHECKING:
    from clinsent.report.paired import Paired
    from clinsent.report.spread import PairedTest, Spread


@dataclass(frozen=True)
class RunsRow:
    label: str = knob("", "the row label", required=True)
    group: str | None = knob(None, "the row's group (a heading above its rows)")
    cells: tuple[str | None, ...] = knob(
        (), "a run per column group (method or method@base_model), or null", required=True
    )
    paper: PaperCells | None = knob(None, PAPER_DOC)


@dataclass(frozen=True)
class RunsKnobs:
    eval_sets: tuple[str, ...] | None = knob(
        None,
        "picks and orders the eval-set columns (default: every eval set); may name finetune entries",
        minItems=1,
    )
    metrics: tuple[str, ...] | None = knob(
        None, "these metrics of each eval set as columns, instead of its headline", minItems=1
    )
    columns: tuple[str, ...] = knob(
        ("",), "column groups (e.g. [S_all, S_ent]): one cell per group in each row", minItems=1
    )
    transpose: bool = knob(False, "rows become columns")
    average: bool = knob(False, "an Avg. column: per seed over those sets, then mean ± std")
    percent: bool = knob(False, "100 × the metric, two decimals")
    rows: tuple[RunsRow, ...] = knob((), "a row per condition", required=True, minItems=1)


@TABLE_KINDS.register("runs", settings=RunsKnobs)
class RunsTable(TableKind):
    curves = True

    def runs(self, key: str, entry: Mapping[str, Any]) -> list[tuple[str, str]]:
        return [
            (f"tables.{key}.rows[{i}] ({row['label']})", c)
            for i, row in enumerate(entry["rows"])
            for c in row["cells"]
            if c
        ]

    def names(self, key: str, entry: Mapping[str, Any]) -> list[tuple[str, str, str]]:
        return eval_set_names(f"tables.{key}.eval_sets", *(entry.get("eval_sets") or []))

    def caption(self, entry: Mapping[str, Any], paper_label: str) -> str:
        return f"{entry['caption']} Ours: mean ± std over seeds; ({paper_label}): the paper's reported numbers."

    def table(self, key: str, entry: Mapping[str, Any], ctx: ReportContext) -> pd.DataFrame:
        return paper_table(ctx.summary, dict(entry), ctx.eval_sets, ctx.default_base, ctx.paper_label)

    def spread(self, key: str, entry: Mapping[str, Any], ctx: ReportContext) -> Spread:
        from clinsent.report.spread import check

        paired = paper_pairs(dict(entry), ctx.eval_sets, ctx.default_base, ctx.paired) if ctx.paired else None
        return check(*paper_cells(ctx.summary, dict(entry), ctx.eval_sets, ctx.default_base), paired=paired)


def _columns(table: dict[str, Any], eval_sets: dict[str, str]) -> tuple[dict[str, str], list[tuple[str, str, str]]]:
    """The table's eval sets (name -> headline) and its columns (header, eval set, metric)."""
    if table.get("eval_sets"):
        eval_sets = {name: eval_sets[name] for name in table["eval_sets"]}
    return eval_sets, (
        [(f"{name} {m}", name, m) for name in eval_sets for m in table["metrics"]]
        if table.get("metrics")
        else [(name, name, metric) for name, metric in eval_sets.items()]
    )


def paper_cells(
    summary: pd.DataFrame, table: dict[str, Any], eval_sets: dict[str, str], default_base: str
) -> tuple[dict[str, dict[str, np.ndarray]], dict[str, str]]:
    """A runs table's values over seeds, column -> row (its group / label) -> values, and each column's
    metric: what :func:`clinsent.report.spread.check` judges (the Avg. column is left out: it
    follows from the others)."""
    _, columns = _columns(table, eval_sets)
    groups = table.get("columns") or [""]
    cells: dict[str, dict[str, np.ndarray]] = {}
    metrics: dict[str, str] = {}
    for name, eval_set, metric in columns:
        for g, col in enumerate(groups):
            head = f"{name} {col}".strip()
            metrics[head] = metric
            cells[head] = {
                " / ".join(filter(None, (row.get("group"), row["label"]))): cell_values(
                    summary, row["cells"][g], default_base, eval_set, metric
                )
                for row in table["rows"]
                if g < len(row["cells"]) and row["cells"][g]
            }
    return cells, metrics


def paper_pairs(table: dict[str, Any], eval_sets: dict[str, str], default_base: str, paired: Paired) -> PairedTest:
    """The paired test between two rows of a runs table's column (the same heads and row labels
    as :func:`paper_cells`): their cited runs compared on the column's eval set and metric."""
    _, columns = _columns(table, eval_sets)
    groups = table.get("columns") or [""]
    heads = {
        f"{name} {col}".strip(): (eval_set, metric, g)
        for name, eval_set, metric in columns
        for g, col in enumerate(groups)
    }
    refs = {" / ".join(filter(None, (row.get("group"), row["label"]))): row["cells"] for row in table["rows"]}

    def test(head: str, a: str, b: str) -> bool | None:
        eval_set, metric, g = heads[head]
        ra, rb = refs[a][g], refs[b][g]
        return paired.differ(split_run(ra, default_base), split_run(rb, default_base), eval_set, metric)

    return test


def paper_table(
    summary: pd.DataFrame,
    table: dict[str, Any],
    eval_sets: dict[str, str],
    default_base: str,
    paper_label: str = "paper",
) -> pd.DataFrame:
    """``eval_sets``: name -> the headline metric of its task (Spearman for STS)."""
    eval_sets, columns = _columns(table, eval_sets)
    scale, decimals = (100.0, 2) if table.get("percent") else (1.0, 3)
    if table.get("average"):
        columns.append(("Avg.", "Avg.", ""))
    groups = table.get("columns") or [""]
    has_group = any(r.get("group") for r in table["rows"])
    records = []
    for i, row in enumerate(table["rows"]):
        if len(row["cells"]) != len(groups):
            raise InputError(
                f"config: tables, row {i} ({row['label']})",
                f"{len(row['cells'])} cells for {len(groups)} column groups {groups}",
                "give the row one cell per column group",
            )
        rec: dict[str, str] = {"group": row.get("group", "")} if has_group else {}
        rec["row"] = row["label"]
        paper = row.get("paper") or [None] * len(groups)
        for e, (name, eval_set, metric) in enumerate(columns):
            for g, col in enumerate(groups):
                head = f"{name} {col}".strip()
                ref = row["cells"][g]
                if not ref:
                    values = np.array([])
                elif eval_set == "Avg." and table.get("average"):
                    values = average_values(summary, ref, default_base, eval_sets)
                else:
                    values = cell_values(summary, ref, default_base, eval_set, metric)
                if not len(values):
                    rec[head] = MISSING
                elif metric.endswith("_p"):  # a p-value: scientific notation, never scaled
                    rec[head] = fmt_mean_std(values, 2, "e")
                else:
                    rec[head] = fmt_mean_std(values * scale, decimals)
                theirs = paper[g][e] if g < len(paper) and paper[g] and e < len(paper[g]) else None
                rec[f"{head} ({paper_label})"] = theirs or MISSING
        records.append(rec)
    df = pd.DataFrame(records)
    if table.get("transpose"):
        df = df.set_index("row").T.reset_index().rename(columns={"index": "row"})
    return df
