"""Retrieval examples (the augmentation paper's Table 7): for each query, a text of the eval set,
its `k` nearest other texts by cosine under each run's first seed; only eval-set text, never notes
."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from clinsent.config.declare import knob
from clinsent.errors import InputError
from clinsent.report.kinds.base import TABLE_KINDS, ReportContext, TableKind, eval_set_names

if TYPE_CHECKING:
    from clinsent.report.kinds.base import PlanView


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

    def check(self, key: str, entry: Mapping[str, Any], plan: PlanView) -> None:
        """The queries must be texts of the eval set: checked when the config is read, not after training."""
        task = plan.eval_sets[entry["eval_set"]].task
        if all(os.path.exists(f) for f in task.files()):
            check_queries(key, entry, task.texts())

    def inputs(self, key: str, entry: Mapping[str, Any], plan: PlanView) -> dict[str, Any]:
        return {"embeddings": {ref: plan.first_seed_embeddings(ref, entry["eval_set"]) for ref in entry["runs"]}}

    def table(self, key: str, entry: Mapping[str, Any], ctx: ReportContext) -> pd.DataFrame:
        from clinsent.embedding.vectors import read_embeddings

        return retrieval_table(entry, {run: read_embeddings(p) for run, p in ctx.inputs["embeddings"].items()})


def retrieval_table(table: Mapping[str, Any], embeddings: Mapping[str, tuple[list[str], np.ndarray]]) -> pd.DataFrame:
    """For each query (a text of the eval set), its ``k`` nearest other texts under each run."""
    k = int(table.get("k", 2))
    runs = list(table["runs"])
    texts = embeddings[runs[0]][0]
    queries = table.get("queries") or []
    if isinstance(queries, int):
        queries = [
            texts[i] for i in np.random.default_rng(0).choice(len(texts), min(queries, len(texts)), replace=False)
        ]
    check_queries("<retrieval_examples>", table, texts)
    labels = [table.get("labels", {}).get(r, r) for r in runs]
    rows: list[dict[str, str]] = []
    for text in queries:
        block = [{"query": text if r == 0 else "", "rank": f"#{r + 1}"} for r in range(k)]
        for run, label in zip(runs, labels, strict=True):
            run_texts, vectors = embeddings[run]
            at = {t: i for i, t in enumerate(run_texts)}[text]
            unit = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
            sims = unit @ unit[at]
            sims[at] = -np.inf  # never the query itself
            for r, j in enumerate(np.argsort(-sims, kind="stable")[:k]):
                block[r][label] = f"{run_texts[j]} ({sims[j]:.3f})"
        rows += block
    return pd.DataFrame(rows, columns=["query", "rank", *labels])


def check_queries(tid: str, table: Mapping[str, Any], texts: list[str]) -> None:
    """Stop before any job when a retrieval query is not a text of its eval set (named by number)."""
    queries = table.get("queries")
    if isinstance(queries, int):
        return
    known = set(texts)
    for q, text in enumerate(queries or []):
        if text not in known:
            raise InputError(
                f"config: tables.{tid}.queries[{q}]",
                f"query {q} is not a text of eval set {table['eval_set']}",
                "use texts of the eval set (never notes), or a number of random ones",
            )
