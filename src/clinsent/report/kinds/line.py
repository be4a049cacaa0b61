"""Line figures (the healthcare-LM paper's Figures 3 and 4): a line per run over x positions,
each x an eval set or fine-tune entry, mean ± std over seeds beside the paper's values
(:mod:`clinsent.report.doc_figures`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from clinsent.report.kinds.base import FIGURE_KINDS, FigureKind, ReportContext, eval_set_names, item_runs

if TYPE_CHECKING:
    import pandas as pd


@FIGURE_KINDS.register("line")
class LineFigure(FigureKind):
    keys = {
        "xlabel": {"type": "string", "description": "the x axis label"},
        "metric": {"type": "string", "description": "the metric of every x (default each one's headline)"},
        "xs": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["x", "eval_set"],
                "properties": {
                    "x": {"type": "number"},
                    "eval_set": {"type": "string", "description": "an eval set or a finetune entry"},
                },
            },
        },
        "lines": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["label", "run"],
                "properties": {
                    "label": {"type": "string"},
                    "run": {"type": "string"},
                    "paper": {
                        "type": "array",
                        "items": {"type": ["number", "null"]},
                        "description": "the paper's value at each x",
                    },
                },
            },
        },
    }
    required = ("xs", "lines")

    def runs(self, key: str, entry: Mapping[str, Any]) -> list[tuple[str, str]]:
        return item_runs("figures", key, entry, "lines")

    def names(self, key: str, entry: Mapping[str, Any]) -> list[tuple[str, str, str]]:
        return eval_set_names(f"figures.{key}", *(p["eval_set"] for p in entry["xs"]))

    def points(self, key: str, entry: Mapping[str, Any], ctx: ReportContext) -> pd.DataFrame:
        from clinsent.report.doc_figures import line_points

        return line_points(ctx.summary, entry, ctx.eval_sets, ctx.default_base)

    def draw(
        self, points: pd.DataFrame, key: str, entry: Mapping[str, Any], ctx: ReportContext, out_paths: list[Any]
    ) -> None:
        from clinsent.report.doc_figures import line_figure

        line_figure(points, entry, ctx.paper_label, out_paths)
