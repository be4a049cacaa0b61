"""Heatmaps (the benchmark's figure): the scores of a leaderboard's models (rows, sorted by mean
rank) on its tasks (columns), each cell labelled with its score
(:func:`clinsent.report.leaderboard.heatmap_figure`); the same keys as a leaderboard table."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from clinsent.report.kinds.base import FIGURE_KINDS, FigureKind, ReportContext, eval_set_names, item_runs
from clinsent.report.kinds.leaderboard import LEADERBOARD_KEYS

if TYPE_CHECKING:
    import pandas as pd


@FIGURE_KINDS.register("heatmap")
class HeatmapFigure(FigureKind):
    name = "heatmap"
    keys = LEADERBOARD_KEYS
    required = ("eval_sets", "models")

    def runs(self, key: str, entry: Mapping[str, Any]) -> list[tuple[str, str]]:
        return item_runs("figures", key, entry, "models")

    def names(self, key: str, entry: Mapping[str, Any]) -> list[tuple[str, str, str]]:
        return eval_set_names(f"figures.{key}.eval_sets", *entry["eval_sets"], *(entry.get("metrics") or {}))

    def points(self, key: str, entry: Mapping[str, Any], ctx: ReportContext) -> pd.DataFrame:
        from clinsent.report.leaderboard import heatmap_points

        return heatmap_points(ctx.summary, entry, ctx.eval_sets, ctx.default_base)

    def draw(self, points: pd.DataFrame, key: str, entry: Mapping[str, Any], ctx: ReportContext,
             out_paths: list[Any]) -> None:
        from clinsent.report.leaderboard import heatmap_figure

        heatmap_figure(points, str(entry["caption"]), out_paths)
