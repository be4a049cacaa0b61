"""Score against the share of the training corpus (the augmentation paper's Figure 1): a line
per series, a point per fraction, mean ± std over seeds
. A panel per eval set; a point is drawn on the
sets its run is evaluated on."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from clinsent.config.declare import knob
from clinsent.report.cells import cell_values
from clinsent.report.figures import pyplot, save_figure
from clinsent.report.kinds.base import FIGURE_KINDS, FigureKind, ReportContext, eval_set_names


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
        return fraction_points(ctx.summary, entry, ctx.eval_sets, ctx.default_base)

    def draw(
        self, points: pd.DataFrame, key: str, entry: Mapping[str, Any], ctx: ReportContext, out_paths: list[Any]
    ) -> None:
        fraction_figure(points, entry, out_paths)


def fraction_points(
    summary: pd.DataFrame, figure: Mapping[str, Any], eval_sets: Mapping[str, str], default_base: str
) -> pd.DataFrame:
    """Mean and std over seeds of each series' runs at each fraction, per eval set."""
    rows = []
    for series in figure["series"]:
        for point in series["points"]:
            for name in figure["eval_sets"]:
                values = cell_values(summary, point["run"], default_base, name, eval_sets[name])
                if len(values):
                    rows.append(
                        {
                            "series": series["label"],
                            "fraction": float(point["x"]),
                            "eval_set": name,
                            "metric": eval_sets[name],
                            "run": point["run"],
                            "seeds": len(values),
                            "mean": float(values.mean()),
                            "std": float(values.std(ddof=1)) if len(values) > 1 else 0.0,
                        }
                    )
    return pd.DataFrame(rows, columns=["series", "fraction", "eval_set", "metric", "run", "seeds", "mean", "std"])


def fraction_figure(points: pd.DataFrame, figure: Mapping[str, Any], out_paths: list[Any]) -> None:

    plt = pyplot()

    sets = list(figure["eval_sets"])
    fig, axes = plt.subplots(1, len(sets), figsize=(4.2 * len(sets), 3.6), squeeze=False)
    for ax, name in zip(axes[0], sets, strict=True):
        sub = points[points["eval_set"] == name]
        for label, g in sub.groupby("series", sort=False):
            g = g.sort_values("fraction")
            ax.errorbar(
                100 * g["fraction"], g["mean"], yerr=g["std"], marker="o", markersize=3, capsize=2, label=label
            )
        metric = sub["metric"].iloc[0] if len(sub) else ""
        ax.set_title(f"{name} ({metric})" if metric else name, fontsize=9)
        ax.set_xscale("log")
        ax.set_xlabel("training data (%)")
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("score")
    axes[0][-1].legend(fontsize=7, loc="best")
    fig.suptitle(figure["caption"], fontsize=9, wrap=True)
    save_figure(fig, out_paths)
