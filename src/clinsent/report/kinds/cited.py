"""Cited tables: the paper's numbers only, for data we cannot have (the healthcare-LM paper's
private-data tables, its OHFT and PSIR datasets; :func:`clinsent.report.doc_figures.cited_table`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from clinsent.report.kinds.base import STRINGS, TABLE_KINDS, ReportContext, TableKind
from clinsent.report.kinds.runs import PAPER_CELLS

if TYPE_CHECKING:
    import pandas as pd


@TABLE_KINDS.register("cited")
class CitedTable(TableKind):
    keys = {
        "columns": {**STRINGS, "default": [""], "description": "the paper's column heads"},
        "rows": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["label"],
                "properties": {"label": {"type": "string"}, "group": {"type": "string"}, "paper": PAPER_CELLS},
            },
        },
    }
    required = ("rows",)

    def table(self, key: str, entry: Mapping[str, Any], ctx: ReportContext) -> pd.DataFrame:
        from clinsent.report.doc_figures import cited_table

        return cited_table(entry, ctx.paper_label)
