"""Cited tables: the paper's numbers only, for data we cannot have (the healthcare-LM paper's
private-data tables, its OHFT and PSIR datasets)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from clinsent.config.declare import knob
from clinsent.report.cells import MISSING
from clinsent.report.kinds.base import PAPER_DOC, TABLE_KINDS, PaperCells, ReportContext, TableKind


@dataclass(frozen=True)
class CitedRow:
    label: str = knob("", "the row label", required=True)
    group: str | None = knob(None, "the row's group")
    paper: PaperCells | None = knob(None, PAPER_DOC)


@dataclass(frozen=True)
class CitedKnobs:
    columns: tuple[str, ...] = knob(("",), "the paper's column heads", minItems=1)
    rows: tuple[CitedRow, ...] = knob((), "a row of the paper's numbers", required=True, minItems=1)


@TABLE_KINDS.register("cited", settings=CitedKnobs)
class CitedTable(TableKind):
    def table(self, key: str, entry: Mapping[str, Any], ctx: ReportContext) -> pd.DataFrame:
        return cited_table(entry, ctx.paper_label)


def cited_table(table: Mapping[str, Any], paper_label: str) -> pd.DataFrame:
    """Rows of the paper's numbers only (data we cannot have), under ``columns``."""
    heads = table.get("columns") or []
    rows = []
    for row in table["rows"]:
        paper = (row.get("paper") or [[]])[0] or []
        rec = {"group": row.get("group", ""), "row": row["label"]}
        rec.update(
            {
                f"{h} ({paper_label})": paper[i] if i < len(paper) and paper[i] is not None else MISSING
                for i, h in enumerate(heads)
            }
        )
        rows.append(rec)
    df = pd.DataFrame(rows)
    return df if df["group"].astype(bool).any() else df.drop(columns="group")
