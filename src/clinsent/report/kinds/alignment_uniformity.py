"""Alignment against uniformity (MED-SE's Figure 2; Wang and Isola 2020): a point per run, the
mean over seeds on one eval set, labelled with a score
(:mod:`clinsent.report.paper`)."""

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


@FIGURE_KINDS.register("alignment_uniformity")
class AlignmentUniformityFigure(FigureKind):
    keys = {
        "eval_set": {"type": "string", "description": "the eval set of the alignment and uniformity"},
        "points": LABELLED_RUNS,
        "score_eval_set": {"type": "string", "description": "the set of the labelling score (default eval_set)"},
        "score_metric": {
            "type": "string",
            "description": "the labelling score (default spearman; Figure 6: f1_macro of the frozen task)",
        },
    }
    required = ("eval_set", "points")

    def runs(self, key: str, entry: Mapping[str, Any]) -> list[tuple[str, str]]:
        return item_runs("figures", key, entry, "points")

    def names(self, key: str, entry: Mapping[str, Any]) -> list[tuple[str, str, str]]:
        return eval_set_names(
            f"figures.{key}", entry["eval_set"], *([entry["score_eval_set"]] if entry.get("score_eval_set") else [])
        )

    def points(self, key: str, entry: Mapping[str, Any], ctx: ReportContext) -> pd.DataFrame:
        from clinsent.report.paper import figure_points

        return figure_points(ctx.summary, dict(entry), ctx.default_base)

    def draw(
        self, points: pd.DataFrame, key: str, entry: Mapping[str, Any], ctx: ReportContext, out_paths: list[Any]
    ) -> None:
        from clinsent.report.paper import alignment_uniformity_figure

        alignment_uniformity_figure(points, entry["caption"], out_paths)
