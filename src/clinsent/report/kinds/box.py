"""Box plots (the healthcare-LM paper's Figure 5): a box per run of the within- and between-class
cosines its eval set's task recorded (:mod:`clinsent.report.doc_figures`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from clinsent.report.kinds.base import (
    FIGURE_KINDS,
    LABELLED_RUNS,
    FigureKind,
    ReportContext,
    eval_set_names,
    item_runs,
)

if TYPE_CHECKING:
    import pandas as pd


@FIGURE_KINDS.register("box")
class BoxFigure(FigureKind):
    keys = {"eval_set": {"type": "string", "description": "a class_similarity eval set"}, "panels": LABELLED_RUNS}
    required = ("eval_set", "panels")

    def runs(self, key: str, entry: Mapping[str, Any]) -> list[tuple[str, str]]:
        return item_runs("figures", key, entry, "panels")

    def names(self, key: str, entry: Mapping[str, Any]) -> list[tuple[str, str, str]]:
        return eval_set_names(f"figures.{key}", entry["eval_set"])

    def points(self, key: str, entry: Mapping[str, Any], ctx: ReportContext) -> pd.DataFrame:
        from clinsent.report.doc_figures import box_points

        return box_points(ctx.summary, entry, ctx.default_base)

    def draw(
        self, points: pd.DataFrame, key: str, entry: Mapping[str, Any], ctx: ReportContext, out_paths: list[Any]
    ) -> None:
        from clinsent.report.doc_figures import box_figure

        box_figure(points, entry, out_paths)
