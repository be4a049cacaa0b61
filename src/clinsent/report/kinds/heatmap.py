"""Heatmaps (the benchmark's figure): the scores of a leaderboard's models (rows, sorted by mean
rank) on its tasks (columns), each cell labelled with its score
; the same keys as a leaderboard table."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from clinsent.report.cells import MISSING
from clinsent.report.figures import pyplot, save_figure
from clinsent.report.kinds.base import FIGURE_KINDS, FigureKind, ReportContext
from clinsent.report.kinds.leaderboard import RANK, LeaderboardKnobs, ModelsEntry, scores


@FIGURE_KINDS.register("heatmap", settings=LeaderboardKnobs)
class HeatmapFigure(ModelsEntry, FigureKind):
    def points(self, key: str, entry: Mapping[str, Any], ctx: ReportContext) -> pd.DataFrame:
        return heatmap_points(ctx.summary, entry, ctx.eval_sets, ctx.default_base)

    def draw(
        self, points: pd.DataFrame, key: str, entry: Mapping[str, Any], ctx: ReportContext, out_paths: list[Any]
    ) -> None:
        heatmap_figure(points, str(entry["caption"]), out_paths)


def heatmap_points(
    summary: pd.DataFrame, entry: Mapping[str, Any], headlines: Mapping[str, str], default_base: str
) -> pd.DataFrame:
    """Long form of the scores (model, task, score, rank), models in mean-rank order."""
    df = scores(summary, entry, headlines, default_base)
    rows = [
        {
            "model": r["label"],
            "run": r["run"],
            "order": i,
            "mean_rank": r[RANK],
            "task": t,
            "score": r[t],
            "rank": r[f"{t} rank"],
        }
        for i, r in df.iterrows()
        for t in entry["eval_sets"]
    ]
    return pd.DataFrame(rows, columns=["model", "run", "order", "mean_rank", "task", "score", "rank"])


def heatmap_figure(points: pd.DataFrame, caption: str, out_paths: list[Any]) -> None:
    """Models (rows, best mean rank on top) x tasks, each cell coloured and labelled with its score."""

    plt = pyplot()
    models = list(dict.fromkeys(points.sort_values("order")["model"]))
    tasks = list(dict.fromkeys(points["task"]))
    grid = points.pivot(index="model", columns="task", values="score").reindex(index=models, columns=tasks)
    fig, ax = plt.subplots(figsize=(1.2 + 1.1 * max(len(tasks), 1), 1.0 + 0.45 * max(len(models), 1)))
    image = ax.imshow(np.ma.masked_invalid(grid.to_numpy(dtype=float)), cmap="viridis", aspect="auto")
    for i in range(len(models)):
        for j in range(len(tasks)):
            value = grid.iat[i, j]
            ax.text(
                j,
                i,
                MISSING if np.isnan(value) else f"{value:.3f}",
                ha="center",
                va="center",
                fontsize=7,
                color="white" if not np.isnan(value) and value < np.nanmean(grid.to_numpy(dtype=float)) else "black",
            )
    ax.set_xticks(range(len(tasks)), tasks, rotation=30, ha="right", fontsize=8)
    ax.set_yticks(range(len(models)), models, fontsize=8)
    fig.colorbar(image, ax=ax, fraction=0.04)
    ax.set_title(caption, fontsize=9, wrap=True)
    save_figure(fig, out_paths)
