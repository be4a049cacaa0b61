"""Document lengths (the healthcare-LM paper's Table 12 and Figure 7), read from the documents
stage's statistics (:mod:`clinsent.report.doc_figures`): the table of the share of documents at
or above each minimum length beside the paper's, and the figure of the pre-training documents per length bin."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from clinsent.report.kinds.base import (
    FIGURE_KINDS,
    PAPER_DOC,
    TABLE_KINDS,
    FigureKind,
    PaperCells,
    ReportContext,
    TableKind,
)
from clinsent.settings import knob

if TYPE_CHECKING:
    import pandas as pd

    from clinsent.plan import Plan


def _stats(plan: Plan) -> dict[str, Any]:
    return {"documents": plan.documents_stats_path()}


@dataclass(frozen=True)
class LengthRow:
    label: str = knob("", "a minimum length in words (16 … 2048)", required=True)
    paper: PaperCells | None = knob(None, PAPER_DOC)


@dataclass(frozen=True)
class DocLengthsTableKnobs:
    columns: tuple[str, ...] = knob(("",), "the paper's column heads", minItems=1)
    rows: tuple[LengthRow, ...] = knob((), "a row per minimum length", required=True, minItems=1)


@dataclass(frozen=True)
class DocLengthsFigureKnobs:
    partition: Literal["pretrain", "downstream"] | None = knob(None, "the documents shown (default pretrain)")


@TABLE_KINDS.register("doc_lengths", settings=DocLengthsTableKnobs)
class DocLengthsTable(TableKind):
    def inputs(self, key: str, entry: Mapping[str, Any], plan: Plan) -> dict[str, Any]:
        return _stats(plan)

    def table(self, key: str, entry: Mapping[str, Any], ctx: ReportContext) -> pd.DataFrame:
        from clinsent.report import doc_figures

        return doc_figures.length_table(entry, doc_figures.read_stats(ctx.inputs["documents"]), ctx.paper_label)


@FIGURE_KINDS.register("doc_lengths", settings=DocLengthsFigureKnobs)
class DocLengthsFigure(FigureKind):
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
