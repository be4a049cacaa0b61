"""The tidy results contract: ``results/summary.csv``.

One row per method x base_model x seed x eval_set x metric, columns exactly
``method,base_model,seed,eval_set,metric,value,step,ci_low,ci_high`` (step: the selected training
step, 0 for ``objective: none``; ``ci_low``/``ci_high``: the metric's 95% bootstrap interval over the
eval set's items, :mod:`clinsent.evaluation.bootstrap`, empty for geometry statistics, fitted
values and tasks without items). Each eval set's task names its metrics (STS: spearman, pearson,
alignment, uniformity; RQE: accuracy, threshold, dev_accuracy). The report adds the paired
difference to the reference run and a ``status`` column (:func:`clinsent.report.paired.with_differences`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pandas as pd

SUMMARY_COLUMNS = ["method", "base_model", "seed", "eval_set", "metric", "value", "step", "ci_low", "ci_high"]


def _number(value: Any) -> float:
    """A metric from a result file: null (an undefined metric, see :func:`clinsent.io.files.write_json`) is NaN."""
    return float("nan") if value is None else float(value)


def summary_rows(records: Iterable[dict[str, Any]], metrics_of: Mapping[str, Sequence[str]]) -> pd.DataFrame:
    """``records``: dicts with method, base_model, seed, eval_set, step and a ``metrics`` dict
    (``some_metrics``: it may lack some of the task's metrics); ``metrics_of``: eval set -> the
    metrics its task reports."""
    rows = []
    for r in records:
        for metric in metrics_of[r["eval_set"]]:
            if r.get("some_metrics") and metric not in r["metrics"]:
                continue  # a cross-encoder scores pairs: no embeddings, so no alignment or uniformity
            low, high = (r["metrics"].get("ci") or {}).get(metric, (None, None))  # score metrics of tasks with items
            rows.append(
                {
                    "method": r["method"],
                    "base_model": r["base_model"],
                    "seed": int(r["seed"]),
                    "eval_set": r["eval_set"],
                    "metric": metric,
                    "value": _number(r["metrics"][metric]),
                    "step": int(r["step"]),
                    "ci_low": _number(low),
                    "ci_high": _number(high),
                }
            )
    df = pd.DataFrame(rows, columns=SUMMARY_COLUMNS)
    return df.sort_values(["method", "base_model", "seed", "eval_set", "metric"], kind="stable").reset_index(drop=True)
