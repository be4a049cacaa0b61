"""Heatmaps (the benchmark's figure): the scores of a leaderboard's models (rows, sorted by mean
rank) on its tasks (columns), each cell labelled with its score
(:func:`clinsent.report.leaderboard.heatmap_figure`); the same keys as a leaderboard table."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from clinsent.report.kinds.base import FIGURE_KINDS, FigureKind, ReportContext
from clinsent.report.kinds.leaderboard import LeaderboardKnobs, ModelsEntry

if TYPE_CHECKING:
    import pandas as pd


@FIGURE_KINDS.register("heatmap", settings=LeaderboardKnobs)
class HeatmapFigure(ModelsEntry, FigureKind):
    def points(self, key: str, entry: Mapping[str, Any], ctx: ReportContext) -> pd.DataFrame:
        from clinsent.report.leaderboard import heatmap_points

        return heatmap_points(ctx.summary, entry, ctx.eval_sets, ctx.default_base)

    def draw(
        self, points: pd.DataFrame, key: str, entry: Mapping[str, Any], ctx: ReportContext, out_paths: list[Any]
    ) -> None:
        from clinsent.report.leaderboard import heatmap_figure

        heatmap_figure(points, str(entry["caption"]), out_paths)
