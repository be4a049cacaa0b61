"""Leaderboard tables (the benchmark, ``config/benchmark.yaml``): a row per model, a column per
task with its headline metric (mean ± std over seeds), the paper's published figure beside a
task where one is given, the mean over tasks and the mean rank; the best of each column in bold
(Markdown ``**``, LaTeX ``\\textbf``). :mod:`clinsent.report.leaderboard` computes it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from clinsent.report.kinds.base import TABLE_KINDS, ReportContext, TableKind, eval_set_names, item_runs
from clinsent.settings import knob

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class LeaderboardModel:
    label: str = knob("", "its row label", required=True)
    run: str = knob("", "method or method@base_model", required=True)
    paper: dict[str, str | float | None] | None = knob(None, "eval set -> the published figure for this model")


@dataclass(frozen=True)
class LeaderboardKnobs:
    eval_sets: tuple[str, ...] = knob(
        (), "the tasks (columns), in order; may name finetune entries", required=True, minItems=1
    )
    metrics: dict[str, str] | None = knob(None, "eval set -> the metric shown instead of its headline")
    models: tuple[LeaderboardModel, ...] = knob((), "a row per model", required=True, minItems=1)


class ModelsEntry:
    """What a leaderboard table and a heatmap share: their keys, and the runs and eval sets they cite."""

    section: ClassVar[str]

    def runs(self, key: str, entry: Mapping[str, Any]) -> list[tuple[str, str]]:
        return item_runs(self.section, key, entry, "models")

    def names(self, key: str, entry: Mapping[str, Any]) -> list[tuple[str, str, str]]:
        return eval_set_names(f"{self.section}.{key}.eval_sets", *entry["eval_sets"], *(entry.get("metrics") or {}))


@TABLE_KINDS.register("leaderboard", settings=LeaderboardKnobs)
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
