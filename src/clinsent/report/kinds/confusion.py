"""Confusion matrices (the clinical NLI study's MedNLI classification): a panel per run, its
test confusion counts, mean over seeds.

The counts are the ``confusion:<true>:<predicted>`` metrics of summary.csv."""

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
class ConfusionKnobs:
    eval_set: str = knob("", "the probe's eval set", required=True)
    classes: tuple[str, ...] = knob((), "the classes, in the matrix's order", required=True, minItems=2)
    panels: tuple[LabelledRun, ...] = knob((), "a panel per run", required=True, minItems=1)


@FIGURE_KINDS.register("confusion", settings=ConfusionKnobs)
class ConfusionFigure(PanelFigure):
    def panel_points(self, summary: pd.DataFrame, figure: Mapping[str, Any], default_base: str) -> pd.DataFrame:
        return confusion_points(summary, figure, default_base)

    def panel_figure(self, points: pd.DataFrame, figure: Mapping[str, Any], out_paths: list[Any]) -> None:
        confusion_figure(points, figure, out_paths)


def confusion_points(summary: pd.DataFrame, figure: Mapping[str, Any], default_base: str) -> pd.DataFrame:
    classes = list(figure["classes"])
    rows = []
    for panel in figure["panels"]:
        for t in classes:
            for p in classes:
                values = cell_values(summary, panel["run"], default_base, figure["eval_set"], f"confusion:{t}:{p}")
                rows.append(
                    {
                        "label": panel["label"],
                        "run": panel["run"],
                        "true": t,
                        "predicted": p,
                        "seeds": len(values),
                        "count": float(values.mean()) if len(values) else np.nan,
                    }
                )
    return pd.DataFrame(rows, columns=["label", "run", "true", "predicted", "seeds", "count"])


def confusion_figure(points: pd.DataFrame, figure: Mapping[str, Any], out_paths: list[Any]) -> None:
    plt = pyplot()
    classes, panels = list(figure["classes"]), list(figure["panels"])
    cols = min(4, len(panels))
    rows = -(-len(panels) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.0 * cols, 2.9 * rows), squeeze=False)
    for ax in axes.flat[len(panels) :]:
        ax.axis("off")
    for ax, panel in zip(axes.flat, panels, strict=False):
        sub = points[points["label"] == panel["label"]]
        matrix = sub.pivot(index="true", columns="predicted", values="count").reindex(index=classes, columns=classes)
        ax.imshow(matrix.fillna(0).to_numpy(), cmap="Blues")
        for i in range(len(classes)):
            for j in range(len(classes)):
                v = matrix.iat[i, j]
                ax.text(j, i, "–" if np.isnan(v) else f"{v:.0f}", ha="center", va="center", fontsize=7)
        ax.set_xticks(range(len(classes)), classes, rotation=30, fontsize=6)
        ax.set_yticks(range(len(classes)), classes, fontsize=6)
        ax.set_title(panel["label"], fontsize=8)
        ax.set_xlabel("predicted", fontsize=7)
        ax.set_ylabel("true", fontsize=7)
    fig.suptitle(figure["caption"], fontsize=8, wrap=True)
    save_figure(fig, out_paths)
