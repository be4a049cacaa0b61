"""Alignment against uniformity (MED-SE's Figure 2; Wang and Isola 2020): a point per run, the
mean over seeds on one eval set, labelled with a score."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from clinsent.config.declare import knob
from clinsent.report.cells import cell_values
from clinsent.report.figures import pyplot, save_figure
from clinsent.report.kinds.base import (
    FIGURE_KINDS,
    FigureKind,
    LabelledRun,
    ReportContext,
    eval_set_names,
    item_runs,
)


@dataclass(frozen=True)
class AlignmentUniformityKnobs:
    eval_set: str = knob("", "the eval set of the alignment and uniformity", required=True)
    points: tuple[LabelledRun, ...] = knob((), "a point per run", required=True, minItems=1)
    score_eval_set: str | None = knob(None, "the set of the labelling score (default eval_set)")
    score_metric: str | None = knob(
        None, "the labelling score (default spearman; Figure 6: f1_macro of the frozen task)"
    )


@FIGURE_KINDS.register("alignment_uniformity", settings=AlignmentUniformityKnobs)
class AlignmentUniformityFigure(FigureKind):
    def runs(self, key: str, entry: Mapping[str, Any]) -> list[tuple[str, str]]:
        return item_runs("figures", key, entry, "points")

    def names(self, key: str, entry: Mapping[str, Any]) -> list[tuple[str, str, str]]:
        return eval_set_names(
            f"figures.{key}", entry["eval_set"], *([entry["score_eval_set"]] if entry.get("score_eval_set") else [])
        )

    def points(self, key: str, entry: Mapping[str, Any], ctx: ReportContext) -> pd.DataFrame:
        return figure_points(ctx.summary, dict(entry), ctx.default_base)

    def draw(
        self, points: pd.DataFrame, key: str, entry: Mapping[str, Any], ctx: ReportContext, out_paths: list[Any]
    ) -> None:
        alignment_uniformity_figure(points, entry["caption"], out_paths)


def figure_points(summary: pd.DataFrame, figure: dict[str, Any], default_base: str) -> pd.DataFrame:
    """Per point: mean alignment and uniformity on the figure's eval set over seeds, and the
    score each point is labelled with: ``score_metric`` (default Spearman) of ``score_eval_set``
    (default the same set; the healthcare-LM paper's Figure 6: the frozen F1 of the task)."""
    score_set = figure.get("score_eval_set") or figure["eval_set"]
    score = figure.get("score_metric") or "spearman"
    rows = []
    for p in figure["points"]:
        vals = {
            m: cell_values(summary, p["run"], default_base, figure["eval_set"], m) for m in ("alignment", "uniformity")
        }
        vals[score] = cell_values(summary, p["run"], default_base, score_set, score)
        if all(len(v) for v in vals.values()):
            rows.append(
                {
                    "label": p["label"],
                    "run": p["run"],
                    "seeds": len(vals[score]),
                    **{m: float(np.mean(v)) for m, v in vals.items()},
                }
            )
    return pd.DataFrame(rows, columns=["label", "run", "seeds", "alignment", "uniformity", score])


def alignment_uniformity_figure(points: pd.DataFrame, caption: str, out_paths: list[Any]) -> None:
    """Figure 2: uniformity (x) against alignment (y), each point labelled with its Spearman."""

    plt = pyplot()

    fig, ax = plt.subplots(figsize=(5.5, 5.2))
    cmap = plt.get_cmap("tab10")
    score = points.columns[-1]  # the metric each point is labelled with (Spearman, or F1)
    for i, r in enumerate(points.to_dict("records")):  # labelled through the legend: close points never overlap
        ax.scatter(r["uniformity"], r["alignment"], color=cmap(i % 10), s=40, label=f"{r['label']} ({r[score]:.3f})")
        ax.annotate(
            str(i + 1), (r["uniformity"], r["alignment"]), textcoords="offset points", xytext=(4, 4), fontsize=7
        )
    ax.legend(
        [f"{i + 1}. {t.get_text()}" for i, t in enumerate(ax.legend().get_texts())],
        fontsize=7,
        loc="upper center",
        bbox_to_anchor=(0.5, -0.15),
        ncol=1,
        frameon=False,
    )
    ax.set_xlabel("uniformity (lower is better)")
    ax.set_ylabel("alignment (lower is better)")
    ax.grid(alpha=0.3)
    ax.set_title(caption, fontsize=9, wrap=True)
    save_figure(fig, out_paths)
