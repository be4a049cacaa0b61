"""Score against the share of the training corpus (the augmentation paper's Figure 1): a line
per series, a point per fraction, mean ± std over seeds
(:func:`clinsent.report.extras.fraction_points`). A panel per eval set; a point is drawn on the
sets its run is evaluated on."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from clinsent.report.kinds.base import FIGURE_KINDS, FigureKind, ReportContext, eval_set_names
from clinsent.settings import knob

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class FractionPoint:
    x: float = knob(0.0, "the share of the corpus trained on", required=True, exclusiveMinimum=0, maximum=1)
    run: str = knob("", "method or method@base_model", required=True)


@dataclass(frozen=True)
class FractionSeries:
    label: str = knob("", "its label", required=True)
    points: tuple[FractionPoint, ...] = knob((), "a point per share", required=True, minItems=1)


@dataclass(frozen=True)
class FractionKnobs:
    eval_sets: tuple[str, ...] = knob((), "a panel per eval set", required=True, minItems=1)
    series: tuple[FractionSeries, ...] = knob((), "a line per series", required=True, minItems=1)


@FIGURE_KINDS.register("fraction", settings=FractionKnobs)
class FractionFigure(FigureKind):
    def runs(self, key: str, entry: Mapping[str, Any]) -> list[tuple[str, str]]:
        return [
            (f"figures.{key}.series[{i}].points[{j}]", p["run"])
            for i, series in enumerate(entry["series"])
            for j, p in enumerate(series["points"])
        ]

    def names(self, key: str, entry: Mapping[str, Any]) -> list[tuple[str, str, str]]:
        return eval_set_names(f"figures.{key}", *entry["eval_sets"])

    def points(self, key: str, entry: Mapping[str, Any], ctx: ReportContext) -> pd.DataFrame:
        from clinsent.report.extras import fraction_points

        return fraction_points(ctx.summary, entry, ctx.eval_sets, ctx.default_base)

    def draw(
        self, points: pd.DataFrame, key: str, entry: Mapping[str, Any], ctx: ReportContext, out_paths: list[Any]
    ) -> None:
        from clinsent.report.extras import fraction_figure

        fraction_figure(points, entry, out_paths)
