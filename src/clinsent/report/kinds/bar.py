"""Bar charts (the clinical NLI study's MRR and BIOSSES charts): a bar per run, mean ± std over
seeds of one eval set's metric, the paper's value beside it (:mod:`clinsent.report.pair_figures`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from clinsent.report.kinds.base import FIGURE_KINDS, FigureKind, ReportContext, eval_set_names, item_runs
from clinsent.settings import knob

if TYPE_CHECKING:
    import pandas as pd


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
        from clinsent.report.pair_figures import bar_points

        return bar_points(ctx.summary, entry, ctx.eval_sets, ctx.default_base)

    def draw(
        self, points: pd.DataFrame, key: str, entry: Mapping[str, Any], ctx: ReportContext, out_paths: list[Any]
    ) -> None:
        from clinsent.report.pair_figures import bar_figure

        bar_figure(points, entry, ctx.paper_label, out_paths)
