"""Paired comparisons of two runs on the same eval set, for the tables that rank or compare rows.

Every evaluate job bootstraps its eval set's items with the same seed
(:data:`clinsent.evaluation.bootstrap.SEED`), so two runs' replicates of a metric come from the
same resamples of the same items, and their difference per resample is a paired bootstrap
(:func:`clinsent.evaluation.bootstrap.paired_interval`). The ``report`` job gathers every
run's replicates into ``stats/bootstrap.parquet``; a run with several seeds compares by the mean
of its seeds' replicates (resample by resample). Only numbers are stored: no item, no text.

Every row of ``summary.csv`` carries its paired difference to a reference run
(:func:`with_differences`): by default the first untrained method of the config (config order)
on the same base model, or ``report.reference``; a seed's row is compared with the mean of the
reference's seeds, on the same resamples.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from clinsent.evaluation.bootstrap import paired_interval, significantly_better

COLUMNS = ["method", "base_model", "seed", "eval_set", "metric", "replicates"]
DIFF_COLUMNS = ["reference", "diff", "diff_ci_low", "diff_ci_high"]  # summary.csv's paired comparison
STATUS = "status"  # summary.csv's last column: why a numeric cell of the row is empty (empty: none is)
# the words of the status column, ``; ``-joined
CI_UNTESTED = "ci untested"  # the metric has no item-level replicates (a geometry statistic, a fitted value)
DIFF_UNTESTED = "diff untested"  # a difference without its paired interval (no replicates on the same resamples)
DIFF_NOT_APPLICABLE = "diff not applicable"  # a p-value, a fitted value or a count: a difference means nothing
REFERENCE = "reference"  # the reference run's own row
NO_REFERENCE = "no reference"  # the reference method has no run on this row's base model, or there is none


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
        self._seeds: dict[tuple[str, str, str, str, int], np.ndarray] = {}
        if table is None or table.empty:
            return
        for (m, b, e, metric), group in table.groupby(["method", "base_model", "eval_set", "metric"], sort=False):
            reps = [np.asarray(r, dtype=np.float64) for r in group["replicates"]]
            for seed, r in zip(group["seed"], reps, strict=True):
                self._seeds[(str(m), str(b), str(e), str(metric), int(seed))] = r
            if reps and all(len(r) == len(reps[0]) for r in reps):
                self._runs[(str(m), str(b), str(e), str(metric))] = np.mean(reps, axis=0)

    def seed_replicates(self, run: tuple[str, str], seed: int, eval_set: str, metric: str) -> np.ndarray | None:
        return self._seeds.get((run[0], run[1], eval_set, metric, int(seed)))

    def interval(
        self, a: tuple[str, str], b: tuple[str, str], eval_set: str, metric: str, seed: int | None = None
    ) -> tuple[float, float] | None:
        """The 95% paired interval of run ``a`` minus run ``b`` (``seed``: of ``a``'s one seed
        against ``b``'s mean over seeds; else the means over seeds); None, untested."""
        ra = self.replicates(a, eval_set, metric) if seed is None else self.seed_replicates(a, seed, eval_set, metric)
        rb = self.replicates(b, eval_set, metric)
        if ra is None or rb is None:
            return None
        return paired_interval(ra, rb)

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


def default_reference(methods: list[str], untrained: set[str], given: str | None) -> str | None:
    """The reference method: ``report.reference`` where given, else the first untrained method
    in config order (None: there is none, and no row has a difference)."""
    if given:
        return given
    return next((m for m in methods if m in untrained), None)


def with_differences(
    summary: pd.DataFrame,
    paired: Paired,
    reference: str | None,
    not_differenced: Mapping[str, Iterable[str]] | None = None,
) -> pd.DataFrame:
    """``summary`` with :data:`DIFF_COLUMNS` and :data:`STATUS`: each row's value minus the mean
    over seeds of the reference method's value on the same base model, eval set and metric, and
    the 95% paired bootstrap interval of that difference (NaN where untested: a metric without
    replicates, a run on another resample). The reference's own rows, rows without the reference
    on their base model, and metrics of ``not_differenced`` (eval set -> metrics a difference
    means nothing for: a p-value, a fitted value, a count) have the four cells empty; the status
    column says why each empty numeric cell is empty."""
    out = summary.copy()
    out["reference"] = ""
    for c in DIFF_COLUMNS[1:]:
        out[c] = np.nan
    skip = {e: set(ms) for e, ms in (not_differenced or {}).items()}
    ref_mean = (
        out[out["method"] == reference].groupby(["base_model", "eval_set", "metric"])["value"].mean()
        if reference is not None and not out.empty
        else None
    )
    status: list[str] = []
    for i, row in out.iterrows():
        words = [CI_UNTESTED] if pd.isna(row["ci_low"]) or pd.isna(row["ci_high"]) else []
        key = (row["base_model"], row["eval_set"], row["metric"])
        if row["method"] == reference:
            words.append(REFERENCE)
        elif ref_mean is None or key not in ref_mean.index:
            words.append(NO_REFERENCE)
        elif row["metric"] in skip.get(row["eval_set"], ()):
            words.append(DIFF_NOT_APPLICABLE)
        else:
            out.at[i, "reference"] = reference
            out.at[i, "diff"] = float(row["value"]) - float(ref_mean[key])
            interval = paired.interval(
                (row["method"], row["base_model"]),
                (str(reference), row["base_model"]),
                row["eval_set"],
                row["metric"],
                seed=int(row["seed"]),
            )
            if interval is not None and all(np.isfinite(interval)):
                out.at[i, "diff_ci_low"], out.at[i, "diff_ci_high"] = interval
            else:
                words.append(DIFF_UNTESTED)
        status.append("; ".join(words))
    out[STATUS] = status
    return out
