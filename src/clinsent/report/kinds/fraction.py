"""Score against the share of the training corpus (the augmentation paper's Figure 1): a line
per series, a point per fraction, mean ± std over seeds
(:func:`clinsent.report.extras.fraction_points`). A panel per eval set; a point is drawn on the
sets its run is evaluated on."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from clinsent.report.kinds.base import FIGURE_KINDS, STRINGS, FigureKind, ReportContext, eval_set_names

if TYPE_CHECKING:
    import pandas as pd


@FIGURE_KINDS.register("fraction")
class FractionFigure(FigureKind):
    keys = {
        "eval_sets": {**STRINGS, "description": "a panel per eval set"},
        "series": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["label", "points"],
                "properties": {
                    "label": {"type": "string"},
                    "points": {
                        "type": "array",
                        "minItems": 1,
                        "items": {
                            "type": "object",
                            "additionalProperties": False,
                            "required": ["x", "run"],
                            "properties": {
                                "x": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
                                "run": {"type": "string"},
                            },
                        },
                    },
                },
            },
        },
    }
    required = ("eval_sets", "series")

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
