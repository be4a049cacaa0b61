"""Eval-set statistics (the augmentation paper's Table 3): the size of each eval set per split,
its task and metric."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from clinsent.config.declare import knob
from clinsent.paths import EVAL_SET_STATS
from clinsent.report.cells import MISSING
from clinsent.report.kinds.base import TABLE_KINDS, ReportContext, TableKind, eval_set_names

if TYPE_CHECKING:
    from clinsent.report.kinds.base import PlanView


@dataclass(frozen=True)
class EvalStatsKnobs:
    eval_sets: tuple[str, ...] = knob((), "the eval sets, one row each", required=True, minItems=1)


@TABLE_KINDS.register("eval_stats", settings=EvalStatsKnobs)
class EvalStatsTable(TableKind):
    def names(self, key: str, entry: Mapping[str, Any]) -> list[tuple[str, str, str]]:
        return eval_set_names(f"tables.{key}.eval_sets", *entry["eval_sets"])

    def inputs(self, key: str, entry: Mapping[str, Any], plan: PlanView) -> dict[str, Any]:
        return {"stats": {e: plan.tree.file(EVAL_SET_STATS, eval_set=e) for e in entry["eval_sets"]}}

    def table(self, key: str, entry: Mapping[str, Any], ctx: ReportContext) -> pd.DataFrame:
        return eval_stats_table(entry, ctx.inputs["stats"])


def eval_stats_table(table: Mapping[str, Any], stats: Mapping[str, str]) -> pd.DataFrame:
    """Train / dev / test counts (or the one count) of each eval set, with its task and metric."""
    rows = []
    for name in table["eval_sets"]:
        st = json.loads(Path(stats[name]).read_text())
        splits = st["splits"]
        rows.append(
            {
                "dataset": name,
                "train": splits.get("train", MISSING),
                "dev": splits.get("dev", MISSING),
                "test": splits.get("test", splits.get("all", splits.get("pairs", MISSING))),
                "task": st["task"],
                "metric": st["metric"],
                "used": st["used"],
            }
        )
    return pd.DataFrame(rows, columns=["dataset", "train", "dev", "test", "task", "metric", "used"])
