"""Retrieval examples (the augmentation paper's Table 7): for each query, a text of the eval set,
its `k` nearest other texts by cosine under each run's first seed; only eval-set text, never notes
(:func:`clinsent.report.extras.retrieval_table`)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from clinsent.report.kinds.base import TABLE_KINDS, ReportContext, TableKind, eval_set_names
from clinsent.settings import knob

if TYPE_CHECKING:
    import pandas as pd

    from clinsent.plan import Plan


@dataclass(frozen=True)
class RetrievalExamplesKnobs:
    eval_set: str = knob("", "the eval set whose texts are searched", required=True)
    queries: tuple[str, ...] | int = knob(
        (),
        "texts of the eval set, or a number of random ones",
        required=True,
        anyOf=[{"type": "array", "items": {"type": "string"}, "minItems": 1}, {"type": "integer", "minimum": 1}],
    )
    runs: tuple[str, ...] = knob((), "the runs compared (method or method@base_model)", required=True, minItems=1)
    k: int = knob(2, "neighbours per query", minimum=1)
    seed: int = knob(0, "the random queries' draw", minimum=0)
    labels: dict[str, str] | None = knob(None, "run -> its column head")


@TABLE_KINDS.register("retrieval_examples", settings=RetrievalExamplesKnobs)
class RetrievalExamplesTable(TableKind):
    def runs(self, key: str, entry: Mapping[str, Any]) -> list[tuple[str, str]]:
        return [(f"tables.{key}.runs[{i}]", r) for i, r in enumerate(entry["runs"])]

    def names(self, key: str, entry: Mapping[str, Any]) -> list[tuple[str, str, str]]:
        return eval_set_names(f"tables.{key}.eval_set", entry["eval_set"])

    def shown_texts(self, key: str, entry: Mapping[str, Any]) -> list[tuple[str, str]]:
        return [(f"tables.{key}.eval_set", entry["eval_set"])]

    def check(self, key: str, entry: Mapping[str, Any], plan: Plan) -> None:
        """The queries must be texts of the eval set: checked when the config is read, not after training."""
        from clinsent.report.extras import check_queries

        task = plan.eval_sets[entry["eval_set"]].task
        if all(os.path.exists(f) for f in task.files()):
            check_queries(key, entry, task.texts())

    def inputs(self, key: str, entry: Mapping[str, Any], plan: Plan) -> dict[str, Any]:
        return {"embeddings": {ref: plan.first_seed_embeddings(ref, entry["eval_set"]) for ref in entry["runs"]}}

    def table(self, key: str, entry: Mapping[str, Any], ctx: ReportContext) -> pd.DataFrame:
        from clinsent.embed import read_embeddings
        from clinsent.report.extras import retrieval_table

        return retrieval_table(entry, {run: read_embeddings(p) for run, p in ctx.inputs["embeddings"].items()})
