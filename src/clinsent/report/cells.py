"""Cells of the report's tables: a run's values of one metric (one per seed) from summary.csv,
its mean over eval sets per seed, and the mark of a missing cell. Shared by the kinds."""

from __future__ import annotations

import numpy as np
import pandas as pd

from clinsent.run_ref import split_run

MISSING = "–"


def cell_values(
    summary: pd.DataFrame, ref: str, default_base: str, eval_set: str, metric: str = "spearman"
) -> np.ndarray:
    method, base = split_run(ref, default_base)
    sel = summary[
        (summary["method"] == method)
        & (summary["base_model"] == base)
        & (summary["eval_set"] == eval_set)
        & (summary["metric"] == metric)
    ]
    return sel.sort_values("seed")["value"].to_numpy()


def average_values(summary: pd.DataFrame, ref: str, default_base: str, eval_sets: dict[str, str]) -> np.ndarray:
    """Per seed, the mean over ``eval_sets`` of their headline metric (seeds missing a set are left out)."""
    method, base = split_run(ref, default_base)
    sel = summary[(summary["method"] == method) & (summary["base_model"] == base)]
    sel = sel[[eval_sets.get(e) == m for e, m in zip(sel["eval_set"], sel["metric"], strict=True)]]
    per_seed = sel.groupby("seed")["value"].agg(["mean", "count"])
    return per_seed.loc[per_seed["count"] == len(eval_sets), "mean"].to_numpy()
