"""Leaderboard tables (the benchmark, ``config/benchmark.yaml``): a row per model, a column per
task with its headline metric (mean ± std over seeds), the paper's published figure beside a
task where one is given, the mean over tasks and the mean rank; the best of each column in bold
(Markdown ``**``, LaTeX ``\\textbf``). :mod:`clinsent.report.leaderboard` computes it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from clinsent.report.kinds.base import STRINGS, TABLE_KINDS, ReportContext, TableKind, eval_set_names, item_runs

if TYPE_CHECKING:
    import pandas as pd

MODELS: dict[str, Any] = {
    "type": "array",
    "minItems": 1,
    "items": {
        "type": "object",
        "additionalProperties": False,
        "required": ["label", "run"],
        "properties": {
            "label": {"type": "string"},
            "run": {"type": "string", "description": "method or method@base_model"},
            "paper": {
                "type": "object",
                "additionalProperties": {"type": ["string", "number", "null"]},
                "description": "eval set -> the published figure for this model",
            },
        },
    },
}
LEADERBOARD_KEYS: dict[str, dict[str, Any]] = {
    "eval_sets": {**STRINGS, "description": "the tasks (columns), in order; may name finetune entries"},
    "metrics": {
        "type": "object",
        "additionalProperties": {"type": "string"},
        "description": "eval set -> the metric shown instead of its headline",
    },
    "models": MODELS,
}


class ModelsEntry:
    """What a leaderboard table and a heatmap share: their keys, and the runs and eval sets they cite."""

    section: ClassVar[str]
    keys: ClassVar[dict[str, dict[str, Any]]] = LEADERBOARD_KEYS
    required: ClassVar[tuple[str, ...]] = ("eval_sets", "models")

    def runs(self, key: str, entry: Mapping[str, Any]) -> list[tuple[str, str]]:
        return item_runs(self.section, key, entry, "models")

    def names(self, key: str, entry: Mapping[str, Any]) -> list[tuple[str, str, str]]:
        return eval_set_names(f"{self.section}.{key}.eval_sets", *entry["eval_sets"], *(entry.get("metrics") or {}))


@TABLE_KINDS.register("leaderboard")
class LeaderboardTable(ModelsEntry, TableKind):
    def caption(self, entry: Mapping[str, Any], paper_label: str) -> str:
        return (
            f"{entry['caption']} Each task's headline metric, mean ± std over seeds; Mean: over every task; "
            f"Mean rank: over the tasks a model has (1 is best); bold: the best of each column, for a task "
            f"with bootstrap intervals only where a paired bootstrap over its items (95%) tells it from every "
            f"other model; ≈: the best and the models it is not told apart from; "
            f"({paper_label}): the published figure."
        )

    def table(self, key: str, entry: Mapping[str, Any], ctx: ReportContext) -> pd.DataFrame:
        from clinsent.report.leaderboard import leaderboard_table

        return leaderboard_table(ctx.summary, entry, ctx.eval_sets, ctx.default_base, ctx.paper_label, ctx.paired)
