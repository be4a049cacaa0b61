"""Box plots (the healthcare-LM paper's Figure 5): a box per run of the within- and between-class
cosines its eval set's task recorded (:mod:`clinsent.report.doc_figures`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from clinsent.report.kinds.base import (
    FIGURE_KINDS,
    FigureKind,
    LabelledRun,
    ReportContext,
    eval_set_names,
    item_runs,
)
from clinsent.settings import knob

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class BoxKnobs:
    eval_set: str = knob("", "a class_similarity eval set", required=True)
    panels: tuple[LabelledRun, ...] = knob((), "a panel per run", required=True, minItems=1)


@FIGURE_KINDS.register("box", settings=BoxKnobs)
class BoxFigure(FigureKind):
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
