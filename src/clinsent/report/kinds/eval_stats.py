"""Eval-set statistics (the augmentation paper's Table 3): the size of each eval set per split,
its task and metric (:func:`clinsent.report.extras.eval_stats_table`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from clinsent.report.kinds.base import TABLE_KINDS, ReportContext, TableKind, eval_set_names
from clinsent.settings import knob

if TYPE_CHECKING:
    import pandas as pd

    from clinsent.plan import Plan


@dataclass(frozen=True)
class EvalStatsKnobs:
    eval_sets: tuple[str, ...] = knob((), "the eval sets, one row each", required=True, minItems=1)


@TABLE_KINDS.register("eval_stats", settings=EvalStatsKnobs)
class EvalStatsTable(TableKind):
    def names(self, key: str, entry: Mapping[str, Any]) -> list[tuple[str, str, str]]:
        return eval_set_names(f"tables.{key}.eval_sets", *entry["eval_sets"])

    def inputs(self, key: str, entry: Mapping[str, Any], plan: Plan) -> dict[str, Any]:
        return {"stats": {e: f"{plan.results}/stats/eval_sets/{e}.json" for e in entry["eval_sets"]}}

    def table(self, key: str, entry: Mapping[str, Any], ctx: ReportContext) -> pd.DataFrame:
        from clinsent.report.extras import eval_stats_table

        return eval_stats_table(entry, ctx.inputs["stats"])
