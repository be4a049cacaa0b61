"""Confusion matrices (the clinical NLI study's MedNLI classification): a panel per run, its
test confusion counts, mean over seeds (:mod:`clinsent.report.pair_figures`)."""

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


@FIGURE_KINDS.register("confusion")
class ConfusionFigure(FigureKind):
    keys = {
        "eval_set": {"type": "string", "description": "the probe's eval set"},
        "classes": {"type": "array", "items": {"type": "string"}, "minItems": 2},
        "panels": LABELLED_RUNS,
    }
    required = ("eval_set", "classes", "panels")

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
