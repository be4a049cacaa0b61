"""Document lengths (the healthcare-LM paper's Table 12 and Figure 7), read from the documents
stage's statistics (:mod:`clinsent.report.doc_figures`): the table of the share of documents at
or above each minimum length beside the paper's, and the figure of the pre-training documents per length bin."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from clinsent.report.kinds.base import FIGURE_KINDS, STRINGS, TABLE_KINDS, FigureKind, ReportContext, TableKind
from clinsent.report.kinds.runs import PAPER_CELLS

if TYPE_CHECKING:
    import pandas as pd

    from clinsent.plan import Plan


def _stats(plan: Plan) -> dict[str, Any]:
    return {"documents": plan.documents_stats_path()}


@TABLE_KINDS.register("doc_lengths")
class DocLengthsTable(TableKind):
    keys = {
        "columns": {**STRINGS, "default": [""], "description": "the paper's column heads"},
        "rows": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["label"],
                "properties": {
                    "label": {"type": "string", "description": "a minimum length in words (16 … 2048)"},
                    "paper": PAPER_CELLS,
                },
            },
        },
    }
    required = ("rows",)

    def inputs(self, key: str, entry: Mapping[str, Any], plan: Plan) -> dict[str, Any]:
        return _stats(plan)

    def table(self, key: str, entry: Mapping[str, Any], ctx: ReportContext) -> pd.DataFrame:
        from clinsent.report import doc_figures

        return doc_figures.length_table(entry, doc_figures.read_stats(ctx.inputs["documents"]), ctx.paper_label)


@FIGURE_KINDS.register("doc_lengths")
class DocLengthsFigure(FigureKind):
    keys = {
        "partition": {
            "type": "string",
            "enum": ["pretrain", "downstream"],
            "description": "the documents shown (default pretrain)",
        }
    }

    def inputs(self, key: str, entry: Mapping[str, Any], plan: Plan) -> dict[str, Any]:
        return _stats(plan)

    def points(self, key: str, entry: Mapping[str, Any], ctx: ReportContext) -> pd.DataFrame:
        from clinsent.report import doc_figures

        return doc_figures.length_points(doc_figures.read_stats(ctx.inputs["documents"]), entry)

    def draw(
        self, points: pd.DataFrame, key: str, entry: Mapping[str, Any], ctx: ReportContext, out_paths: list[Any]
    ) -> None:
        from clinsent.report import doc_figures

        doc_figures.length_figure(points, doc_figures.read_stats(ctx.inputs["documents"]), entry, out_paths)
