"""Retrieval examples (the augmentation paper's Table 7): for each query, a text of the eval set,
its `k` nearest other texts by cosine under each run's first seed; only eval-set text, never notes
(:func:`clinsent.report.extras.retrieval_table`)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from clinsent.report.kinds.base import STRINGS, TABLE_KINDS, ReportContext, TableKind, eval_set_names

if TYPE_CHECKING:
    import pandas as pd

    from clinsent.plan import Plan


@TABLE_KINDS.register("retrieval_examples")
class RetrievalExamplesTable(TableKind):
    keys = {
        "eval_set": {"type": "string", "description": "the eval set whose texts are searched"},
        "queries": {
            "oneOf": [
                {"type": "array", "items": {"type": "string"}, "minItems": 1},
                {"type": "integer", "minimum": 1},
            ],
            "description": "texts of the eval set, or a number of random ones",
        },
        "runs": {**STRINGS, "description": "the runs compared (method or method@base_model)"},
        "k": {"type": "integer", "minimum": 1, "default": 2, "description": "neighbours per query"},
        "seed": {"type": "integer", "minimum": 0, "default": 0},
        "labels": {"type": "object", "description": "run -> its column head"},
    }
    required = ("eval_set", "queries", "runs")

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
