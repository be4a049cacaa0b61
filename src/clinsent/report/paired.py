"""Paired comparisons of two runs on the same eval set, for the tables that rank or compare rows.

Every evaluate job bootstraps its eval set's items with the same seed
(:data:`clinsent.evaluation.bootstrap.SEED`), so two runs' replicates of a metric come from the
same resamples of the same items, and their difference per resample is a paired bootstrap
(:func:`clinsent.evaluation.bootstrap.significantly_better`). The ``report`` job gathers every
run's replicates into ``stats/bootstrap.parquet``; a run with several seeds compares by the mean
of its seeds' replicates (resample by resample). Only numbers are stored: no item, no text.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from clinsent.evaluation.bootstrap import significantly_better

COLUMNS = ["method", "base_model", "seed", "eval_set", "metric", "replicates"]


def replicate_rows(records: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """One row per run x seed x eval set x metric with replicates (``records``: method, base_model,
    seed, eval_set and the evaluate job's ``metrics``; a resample where the metric is undefined is
    null in that JSON, NaN here)."""
    rows = [
        {
            "method": r["method"],
            "base_model": r["base_model"],
            "seed": int(r["seed"]),
            "eval_set": r["eval_set"],
            "metric": metric,
            "replicates": [float("nan") if x is None else float(x) for x in values],
        }
        for r in records
        for metric, values in (r["metrics"].get("ci_replicates") or {}).items()
    ]
    return pd.DataFrame(rows, columns=COLUMNS)


class Paired:
    """The replicates of every run, and the paired test between two runs."""

    def __init__(self, table: pd.DataFrame | None) -> None:
        self._runs: dict[tuple[str, str, str, str], np.ndarray] = {}
        if table is None or table.empty:
            return
        for (m, b, e, metric), group in table.groupby(["method", "base_model", "eval_set", "metric"], sort=False):
            reps = [np.asarray(r, dtype=np.float64) for r in group["replicates"]]
            if reps and all(len(r) == len(reps[0]) for r in reps):
                self._runs[(str(m), str(b), str(e), str(metric))] = np.mean(reps, axis=0)

    def replicates(self, run: tuple[str, str], eval_set: str, metric: str) -> np.ndarray | None:
        return self._runs.get((run[0], run[1], eval_set, metric))

    def better(self, a: tuple[str, str], b: tuple[str, str], eval_set: str, metric: str) -> bool | None:
        """Whether run ``a`` scores significantly higher than run ``b`` (None, untested: no
        replicates for one, or a test that cannot be computed on them)."""
        ra, rb = self.replicates(a, eval_set, metric), self.replicates(b, eval_set, metric)
        if ra is None or rb is None:
            return None
        return significantly_better(ra, rb)

    def differ(self, a: tuple[str, str], b: tuple[str, str], eval_set: str, metric: str) -> bool | None:
        """Whether one of the two runs scores significantly higher than the other (None: untested)."""
        ab = self.better(a, b, eval_set, metric)
        if ab is None or ab:
            return ab
        return self.better(b, a, eval_set, metric)
