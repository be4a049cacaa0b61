"""Cited tables: the paper's numbers only, for data we cannot have (the healthcare-LM paper's
private-data tables, its OHFT and PSIR datasets; :func:`clinsent.report.doc_figures.cited_table`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from clinsent.report.kinds.base import PAPER_DOC, TABLE_KINDS, PaperCells, ReportContext, TableKind
from clinsent.settings import knob

if TYPE_CHECKING:
    import pandas as pd


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
        from clinsent.report.doc_figures import cited_table

        return cited_table(entry, ctx.paper_label)
