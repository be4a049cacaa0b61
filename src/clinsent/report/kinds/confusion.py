"""Confusion matrices (the clinical NLI study's MedNLI classification): a panel per run, its
test confusion counts, mean over seeds (:mod:`clinsent.report.pair_figures`)."""

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
class ConfusionKnobs:
    eval_set: str = knob("", "the probe's eval set", required=True)
    classes: tuple[str, ...] = knob((), "the classes, in the matrix's order", required=True, minItems=2)
    panels: tuple[LabelledRun, ...] = knob((), "a panel per run", required=True, minItems=1)


@FIGURE_KINDS.register("confusion", settings=ConfusionKnobs)
class ConfusionFigure(FigureKind):
    def runs(self, key: str, entry: Mapping[str, Any]) -> list[tuple[str, str]]:
        return item_runs("figures", key, entry, "panels")

    def names(self, key: str, entry: Mapping[str, Any]) -> list[tuple[str, str, str]]:
        return eval_set_names(f"figures.{key}", entry["eval_set"])

    def points(self, key: str, entry: Mapping[str, Any], ctx: ReportContext) -> pd.DataFrame:
        from clinsent.report.pair_figures import confusion_points

        return confusion_points(ctx.summary, entry, ctx.default_base)

    def draw(
        self, points: pd.DataFrame, key: str, entry: Mapping[str, Any], ctx: ReportContext, out_paths: list[Any]
    ) -> None:
        from clinsent.report.pair_figures import confusion_figure

        confusion_figure(points, entry, out_paths)
