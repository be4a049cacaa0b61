"""Runs tables (the default kind): rows citing runs, a column per eval set (or per eval set and
metric), mean ± std over seeds beside the paper's numbers, and a figure of the runs' training
curves (:func:`clinsent.report.paper.paper_table`). Each row's `cells` cite one run per column
group (`method` or `method@base_model`, `null` for an empty cell; `cross_encoder@<base>` a
cross-encoder), `paper` the paper's numbers per column group, one string per eval set. A metric
ending in `_p` (a p-value) is shown in scientific notation, unscaled. With tables or figures, the
job grid is exactly the cited runs."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from clinsent.report.kinds.base import PAPER_DOC, TABLE_KINDS, PaperCells, ReportContext, TableKind, eval_set_names
from clinsent.settings import knob

if TYPE_CHECKING:
    import pandas as pd

    from clinsent.report.spread import Spread


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
        from clinsent.report.paper import paper_table

        return paper_table(ctx.summary, dict(entry), ctx.eval_sets, ctx.default_base, ctx.paper_label)

    def spread(self, key: str, entry: Mapping[str, Any], ctx: ReportContext) -> Spread:
        from clinsent.report.paper import paper_cells, paper_pairs
        from clinsent.report.spread import check

        paired = paper_pairs(dict(entry), ctx.eval_sets, ctx.default_base, ctx.paired) if ctx.paired else None
        return check(*paper_cells(ctx.summary, dict(entry), ctx.eval_sets, ctx.default_base), paired=paired)
