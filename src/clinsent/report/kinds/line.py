"""Line figures (the healthcare-LM paper's Figures 3 and 4): a line per run over x positions,
each x an eval set or fine-tune entry, mean ± std over seeds beside the paper's values.

Figure 3 plots F1 against samples per class, Figure 4 F1 against frozen layers."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from clinsent.config.declare import knob
from clinsent.report.cells import cell_values
from clinsent.report.figures import pyplot, save_figure
from clinsent.report.kinds.base import FIGURE_KINDS, FigureKind, ReportContext, eval_set_names, item_runs


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
        return line_points(ctx.summary, entry, ctx.eval_sets, ctx.default_base)

    def draw(
        self, points: pd.DataFrame, key: str, entry: Mapping[str, Any], ctx: ReportContext, out_paths: list[Any]
    ) -> None:
        line_figure(points, entry, ctx.paper_label, out_paths)


def line_points(
    summary: pd.DataFrame, figure: Mapping[str, Any], eval_sets: Mapping[str, str], default_base: str
) -> pd.DataFrame:
    rows = []
    for series in figure["lines"]:
        paper = series.get("paper") or []
        for k, point in enumerate(figure["xs"]):
            metric = figure.get("metric") or eval_sets[point["eval_set"]]
            values = cell_values(summary, series["run"], default_base, point["eval_set"], metric)
            rows.append(
                {
                    "label": series["label"],
                    "run": series["run"],
                    "x": point["x"],
                    "eval_set": point["eval_set"],
                    "metric": metric,
                    "seeds": len(values),
                    "mean": float(values.mean()) if len(values) else np.nan,
                    "std": float(values.std(ddof=1)) if len(values) > 1 else 0.0,
                    "paper": paper[k] if k < len(paper) else None,
                }
            )
    return pd.DataFrame(rows, columns=["label", "run", "x", "eval_set", "metric", "seeds", "mean", "std", "paper"])


def line_figure(points: pd.DataFrame, figure: Mapping[str, Any], paper_label: str, out_paths: list[Any]) -> None:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5.2, 3.6))
    cmap = plt.get_cmap("tab10")
    for i, (label, sub) in enumerate(points.groupby("label", sort=False)):
        ax.errorbar(sub["x"], sub["mean"], yerr=sub["std"], marker="o", capsize=2, color=cmap(i % 10), label=label)
        paper = pd.to_numeric(sub["paper"], errors="coerce")
        if paper.notna().any():
            ax.plot(
                sub["x"], paper, ls="--", marker="x", color=cmap(i % 10), alpha=0.6, label=f"{label} ({paper_label})"
            )
    ax.set_xlabel(figure.get("xlabel", "x"))
    ax.set_ylabel(str(points["metric"].iloc[0]) if len(points) else "")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    ax.set_title(figure["caption"], fontsize=8, wrap=True)
    save_figure(fig, out_paths)
