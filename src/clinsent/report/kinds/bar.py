"""Bar charts (the clinical NLI study's MRR and BIOSSES charts): a bar per run, mean ± std over
seeds of one eval set's metric, the paper's value beside it."""

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
class Bar:
    label: str = knob("", "its label", required=True)
    run: str = knob("", "method or method@base_model", required=True)
    paper: float | None = knob(None, "the paper's value", type=["number", "null"])


@dataclass(frozen=True)
class BarKnobs:
    eval_set: str = knob("", "an eval set or a finetune entry", required=True)
    metric: str | None = knob(None, "the metric (default the headline)")
    bars: tuple[Bar, ...] = knob((), "a bar per run", required=True, minItems=1)


@FIGURE_KINDS.register("bar", settings=BarKnobs)
class BarFigure(FigureKind):
    def runs(self, key: str, entry: Mapping[str, Any]) -> list[tuple[str, str]]:
        return item_runs("figures", key, entry, "bars")

    def names(self, key: str, entry: Mapping[str, Any]) -> list[tuple[str, str, str]]:
        return eval_set_names(f"figures.{key}", entry["eval_set"])

    def points(self, key: str, entry: Mapping[str, Any], ctx: ReportContext) -> pd.DataFrame:
        return bar_points(ctx.summary, entry, ctx.eval_sets, ctx.default_base)

    def draw(
        self, points: pd.DataFrame, key: str, entry: Mapping[str, Any], ctx: ReportContext, out_paths: list[Any]
    ) -> None:
        bar_figure(points, entry, ctx.paper_label, out_paths)


def bar_points(
    summary: pd.DataFrame, figure: Mapping[str, Any], eval_sets: Mapping[str, str], default_base: str
) -> pd.DataFrame:
    metric = figure.get("metric") or eval_sets[figure["eval_set"]]
    rows = []
    for bar in figure["bars"]:
        values = cell_values(summary, bar["run"], default_base, figure["eval_set"], metric)
        rows.append(
            {
                "label": bar["label"],
                "run": bar["run"],
                "metric": metric,
                "seeds": len(values),
                "mean": float(values.mean()) if len(values) else np.nan,
                "std": float(values.std(ddof=1)) if len(values) > 1 else 0.0,
                "paper": bar.get("paper"),
            }
        )
    return pd.DataFrame(rows, columns=["label", "run", "metric", "seeds", "mean", "std", "paper"])


def bar_figure(points: pd.DataFrame, figure: Mapping[str, Any], paper_label: str, out_paths: list[Any]) -> None:
    plt = pyplot()
    x = np.arange(len(points))
    fig, ax = plt.subplots(figsize=(max(4.0, 0.9 * len(points) + 1.5), 3.4))
    has_paper = points["paper"].notna().any()
    width = 0.4 if has_paper else 0.7
    ax.bar(
        x - (width / 2 if has_paper else 0),
        points["mean"].fillna(0),
        width,
        yerr=points["std"],
        capsize=2,
        label="ours (mean ± std)",
    )
    if has_paper:
        ax.bar(x + width / 2, pd.to_numeric(points["paper"]).fillna(0), width, label=paper_label, alpha=0.6)
    ax.set_xticks(x, points["label"], rotation=30, ha="right", fontsize=8)
    ax.set_ylabel(str(points["metric"].iloc[0]) if len(points) else "")
    ax.legend(fontsize=7)
    ax.set_title(figure["caption"], fontsize=8, wrap=True)
    save_figure(fig, out_paths)
