"""Box plots (the healthcare-LM paper's Figure 5): a box per run of the within- and between-class
cosines its eval set's task recorded.

The box figures are averaged over seeds; each run has its own panel and y scale, as the paper
draws them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from clinsent.config.declare import knob
from clinsent.report.cells import cell_values
from clinsent.report.figures import pyplot, save_figure
from clinsent.report.kinds.base import FIGURE_KINDS, LabelledRun, PanelFigure


@dataclass(frozen=True)
class BoxKnobs:
    eval_set: str = knob("", "a class_similarity eval set", required=True)
    panels: tuple[LabelledRun, ...] = knob((), "a panel per run", required=True, minItems=1)


@FIGURE_KINDS.register("box", settings=BoxKnobs)
class BoxFigure(PanelFigure):
    def panel_points(self, summary: pd.DataFrame, figure: Mapping[str, Any], default_base: str) -> pd.DataFrame:
        return box_points(summary, figure, default_base)

    def panel_figure(self, points: pd.DataFrame, figure: Mapping[str, Any], out_paths: list[Any]) -> None:
        box_figure(points, figure, out_paths)


BOX_STATS = ("whislo", "q1", "med", "q3", "whishi", "mean")


def box_points(summary: pd.DataFrame, figure: Mapping[str, Any], default_base: str) -> pd.DataFrame:
    rows = []
    for panel in figure["panels"]:
        for relation in ("within", "between"):
            rec: dict[str, Any] = {"label": panel["label"], "run": panel["run"], "relation": relation}
            for stat in BOX_STATS:
                values = cell_values(summary, panel["run"], default_base, figure["eval_set"], f"{relation}_{stat}")
                rec[stat] = float(values.mean()) if len(values) else np.nan
            rec["seeds"] = len(values)
            rows.append(rec)
    return pd.DataFrame(rows, columns=["label", "run", "relation", "seeds", *BOX_STATS])


def box_figure(points: pd.DataFrame, figure: Mapping[str, Any], out_paths: list[Any]) -> None:
    plt = pyplot()
    labels = list(dict.fromkeys(points["label"]))
    fig, axes = plt.subplots(1, max(len(labels), 1), figsize=(2.4 * max(len(labels), 1), 3.4), squeeze=False)
    for ax, label in zip(axes[0], labels):
        sub = points[points["label"] == label]
        stats = [
            {
                "label": r.relation,
                "whislo": r.whislo,
                "q1": r.q1,
                "med": r.med,
                "q3": r.q3,
                "whishi": r.whishi,
                "mean": r.mean,
                "fliers": [],
            }
            for r in sub.itertuples()
            if not np.isnan(r.med)
        ]
        if stats:
            ax.bxp(stats, showmeans=True)
        ax.set_title(label, fontsize=8)
        ax.set_ylabel("cosine similarity", fontsize=7)
    fig.suptitle(figure["caption"], fontsize=8)
    save_figure(fig, out_paths)
