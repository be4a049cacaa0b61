"""Alignment against uniformity (MED-SE's Figure 2; Wang and Isola 2020): a point per run, the
mean over seeds on one eval set, labelled with a score
(:mod:`clinsent.report.paper`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from clinsent.report.kinds.base import (
    FIGURE_KINDS,
    FigureKind,
    LabelledRun,
    ReportContext,
    eval_set_names,
    item_runs,
)
from clinsent.settings import knob

if TYPE_CHECKING:
    import pandas as pd


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
        from clinsent.report.paper import figure_points

        return figure_points(ctx.summary, dict(entry), ctx.default_base)

    def draw(
        self, points: pd.DataFrame, key: str, entry: Mapping[str, Any], ctx: ReportContext, out_paths: list[Any]
    ) -> None:
        from clinsent.report.paper import alignment_uniformity_figure

        alignment_uniformity_figure(points, entry["caption"], out_paths)
