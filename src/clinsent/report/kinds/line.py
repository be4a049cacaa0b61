"""Line figures (the healthcare-LM paper's Figures 3 and 4): a line per run over x positions,
each x an eval set or fine-tune entry, mean ± std over seeds beside the paper's values
(:mod:`clinsent.report.doc_figures`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from clinsent.report.kinds.base import FIGURE_KINDS, FigureKind, ReportContext, eval_set_names, item_runs
from clinsent.settings import knob

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class LineX:
    x: float = knob(0.0, "its position on the x axis", required=True)
    eval_set: str = knob("", "an eval set or a finetune entry", required=True)


@dataclass(frozen=True)
class Line:
    label: str = knob("", "its label", required=True)
    run: str = knob("", "method or method@base_model", required=True)
    paper: tuple[float | None, ...] | None = knob(None, "the paper's value at each x")


@dataclass(frozen=True)
class LineKnobs:
    xlabel: str | None = knob(None, "the x axis label")
    metric: str | None = knob(None, "the metric of every x (default each one's headline)")
    xs: tuple[LineX, ...] = knob((), "the x positions and their eval sets", required=True, minItems=1)
    lines: tuple[Line, ...] = knob((), "a line per run", required=True, minItems=1)


@FIGURE_KINDS.register("line", settings=LineKnobs)
class LineFigure(FigureKind):
    def runs(self, key: str, entry: Mapping[str, Any]) -> list[tuple[str, str]]:
        return item_runs("figures", key, entry, "lines")

    def names(self, key: str, entry: Mapping[str, Any]) -> list[tuple[str, str, str]]:
        return eval_set_names(f"figures.{key}", *(p["eval_set"] for p in entry["xs"]))

    def points(self, key: str, entry: Mapping[str, Any], ctx: ReportContext) -> pd.DataFrame:
        from clinsent.report.doc_figures import line_points

        return line_points(ctx.summary, entry, ctx.eval_sets, ctx.default_base)

    def draw(
        self, points: pd.DataFrame, key: str, entry: Mapping[str, Any], ctx: ReportContext, out_paths: list[Any]
    ) -> None:
        from clinsent.report.doc_figures import line_figure

        line_figure(points, entry, ctx.paper_label, out_paths)
