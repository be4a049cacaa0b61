"""95% intervals of an eval set's score metrics: a bootstrap over its items (pairs, questions,
documents), computed by ``scipy.stats.bootstrap`` on the item indices.

A task hands over its scored items (:class:`Items`): how many there are and a statistic that
recomputes its score metrics on a resample of them, with everything fitted held fixed (RQE's
threshold, chosen on the dev pairs, is not refitted; a probe's classifier is not retrained), so
the interval is that of the evaluation on this eval set, not of the model's training. Geometry
statistics (alignment, uniformity) and fitted values (a threshold) get none.

The resampling is seeded (:data:`SEED`, the same for every run, so that two runs scored on the
same eval set see the same resamples and compare pairwise: :func:`significantly_better`) and
stated with the result (:func:`method`). Every paper in this field reports point estimates, so
``docs/uncertainty.md`` says how to read these.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

RESAMPLES = 1000
CURVE_RESAMPLES = 200  # the training curve's band (every eval_every steps: kept cheap)
CONFIDENCE = 0.95
METHOD = "percentile"
SEED = 0  # one seed for every run: the same resamples of an eval set's items, so runs pair up
UNDEFINED_SHARE = 0.1  # a metric undefined on at most this share of resamples: its interval over the others


@dataclass(frozen=True)
class Items:
    """``n`` scored items; ``statistic(idx)`` gives the metrics ``names`` on each row of item
    indices ``idx`` (shape ``(m, n)``, with repeats) as an array of shape ``(len(names), m)``
    (vectorised: one call scores every resample); ``unit`` names an item (``pairs``, ``queries`` ...)."""

    n: int
    names: tuple[str, ...]
    statistic: Callable[[np.ndarray], np.ndarray]
    unit: str

    def full(self) -> dict[str, float]:
        """The metrics on every item once (what the task itself reports)."""
        values = self.statistic(np.arange(self.n)[None, :])[:, 0]
        return dict(zip(self.names, (float(v) for v in values), strict=True))


@dataclass(frozen=True)
class Bootstrap:
    """metric -> (low, high), and metric -> the statistic on each resample (the same resamples of
    the items for every run scored on the eval set, so two runs' replicates pair up)."""

    intervals: dict[str, tuple[float, float]]
    replicates: dict[str, np.ndarray]
    undefined: dict[str, int]  # metric -> resamples on which it is undefined (NaN), where any


def rowwise_pearson(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Pearson's r of each row of ``x`` with the same row of ``y`` (NaN for a constant row)."""
    x = x - x.mean(axis=-1, keepdims=True)
    y = y - y.mean(axis=-1, keepdims=True)
    denom = np.sqrt((x * x).sum(axis=-1) * (y * y).sum(axis=-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(denom > 0, (x * y).sum(axis=-1) / np.where(denom > 0, denom, 1.0), np.nan)


def rowwise_spearman(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Spearman's rho of each row pair: Pearson's r of their ranks (ties: average ranks, as scipy)."""
    from scipy.stats import rankdata

    return rowwise_pearson(rankdata(x, axis=-1), rankdata(y, axis=-1))


def rowwise_classification(
    y: np.ndarray,
    pred: np.ndarray,
    idx: np.ndarray,
    n_classes: int,
    positive: int | None = None,
    every_class: bool = False,
) -> dict[str, np.ndarray]:
    """Accuracy and precision / recall / F1 (macro and support-weighted; binary F1 of class
    ``positive``) of each resample of items (``idx``: (m, n) indices into ``y`` and ``pred``, class
    indices), from per-resample confusion counts, as scikit-learn computes them without
    ``labels``: the macro mean over the classes present in the resample's truth or predictions,
    0 for a class never predicted or never true (``zero_division=0``); ``every_class``: the macro
    mean over all ``n_classes``, as scikit-learn with ``labels=range(n_classes)``."""
    m, k = idx.shape[0], n_classes
    codes = (np.arange(m)[:, None] * k * k + y[idx] * k + pred[idx]).ravel()
    conf = np.bincount(codes, minlength=m * k * k).reshape(m, k, k).astype(np.float64)
    tp = np.diagonal(conf, axis1=1, axis2=2)
    support, predicted = conf.sum(axis=2), conf.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        precision = np.where(predicted > 0, tp / np.where(predicted > 0, predicted, 1), 0.0)
        recall = np.where(support > 0, tp / np.where(support > 0, support, 1), 0.0)
        denom = support + predicted
        f1 = np.where(denom > 0, 2 * tp / np.where(denom > 0, denom, 1), 0.0)
    present = np.ones_like(support, dtype=bool) if every_class else (support + predicted) > 0
    weights = support / support.sum(axis=1, keepdims=True)
    out = {"accuracy": tp.sum(axis=1) / idx.shape[1]}
    for name, per_class in (("precision", precision), ("recall", recall), ("f1", f1)):
        out[f"macro_{name}"] = (per_class * present).sum(axis=1) / present.sum(axis=1)
        out[f"weighted_{name}"] = (per_class * weights).sum(axis=1)
    if positive is not None:
        out["binary_f1"] = f1[:, positive]
    return out


def rowwise_roc_auc(positive: np.ndarray, score: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """The area under the ROC curve of each resample of items (``idx``: (m, n) indices; an item
    drawn twice counts twice, as scikit-learn's ``roc_auc_score`` on the resampled rows), ties
    counted half; NaN for a resample without a positive or without a negative item. From the
    counts of positive and negative items at each distinct score: O(m x n), no sort per resample."""
    _, group = np.unique(score, return_inverse=True)
    m, g = idx.shape[0], int(group.max()) + 1
    codes = (np.arange(m)[:, None] * g + group[idx]).ravel()
    pos = np.bincount(codes, weights=positive[idx].ravel().astype(np.float64), minlength=m * g).reshape(m, g)
    neg = np.bincount(codes, minlength=m * g).reshape(m, g) - pos
    below = np.cumsum(neg, axis=1) - neg  # negatives scored lower than each group
    n_pos, n_neg = pos.sum(axis=1), neg.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where((n_pos > 0) & (n_neg > 0), (pos * (below + 0.5 * neg)).sum(axis=1) / (n_pos * n_neg), np.nan)


def method(items: Items, resamples: int = RESAMPLES, confidence: float = CONFIDENCE) -> dict[str, Any]:
    """How the intervals were computed (written beside them)."""
    return {
        "method": f"bootstrap ({METHOD})",
        "resamples": resamples,
        "confidence": confidence,
        "unit": items.unit,
        "items": items.n,
        "seed": SEED,
    }


def bootstrap_items(
    items: Items, seed: int = 0, resamples: int = RESAMPLES, confidence: float = CONFIDENCE
) -> Bootstrap:
    """``scipy.stats.bootstrap`` of the item indices with the (vectorised) statistic,
    ``method="percentile"``. A metric undefined on some resamples (ROC AUC on a resample without
    one class, a correlation of a constant resample) gets the percentile interval of the resamples
    where it is defined when they are at least ``1 - UNDEFINED_SHARE`` of all (their count is
    recorded: :attr:`Bootstrap.undefined`), NaN bounds otherwise."""
    from scipy.stats import DegenerateDataWarning, bootstrap

    if items.n < 2:
        nan = (float("nan"), float("nan"))
        return Bootstrap({name: nan for name in items.names}, {name: np.full(0, np.nan) for name in items.names}, {})

    def statistic(idx: np.ndarray, axis: int = -1) -> np.ndarray:
        idx = np.asarray(idx, dtype=np.int64)
        flat = idx.reshape(-1, items.n)
        return items.statistic(flat).reshape(len(items.names), *idx.shape[:-1])

    with warnings.catch_warnings():  # scipy's warning for a NaN bound names BCa, not our method: the NaN says it
        warnings.simplefilter("ignore", DegenerateDataWarning)
        result = bootstrap(
            (np.arange(items.n),),
            statistic,
            vectorized=True,
            n_resamples=resamples,
            confidence_level=confidence,
            method=METHOD,
            rng=np.random.default_rng(seed),
        )
    low = np.atleast_1d(result.confidence_interval.low)
    high = np.atleast_1d(result.confidence_interval.high)
    reps = np.asarray(result.bootstrap_distribution).reshape(len(items.names), -1)
    intervals, undefined = {}, {}
    for k, name in enumerate(items.names):
        intervals[name] = (float(low[k]), float(high[k]))
        missing = int(np.isnan(reps[k]).sum())
        if missing:
            undefined[name] = missing
            if missing <= UNDEFINED_SHARE * reps.shape[1]:
                alpha = 100 * (1 - confidence) / 2
                lo, hi = np.percentile(reps[k][~np.isnan(reps[k])], [alpha, 100 - alpha])
                intervals[name] = (float(lo), float(hi))
    return Bootstrap(intervals, {name: reps[k] for k, name in enumerate(items.names)}, undefined)


def interval_record(items: Items | None) -> dict[str, Any]:
    """What an evaluate job writes beside its metrics: ``ci`` (metric -> [low, high]),
    ``ci_method``, and ``ci_replicates`` (metric -> the statistic on each resample, for paired
    comparisons between runs: :func:`significantly_better`); nothing for a task without items.
    Every run on the eval set draws the same resamples (seed :data:`SEED`)."""
    if items is None:
        return {}
    boot = bootstrap_items(items, SEED)
    how = method(items) | ({"undefined_resamples": boot.undefined} if boot.undefined else {})
    return {
        "ci": {k: list(v) for k, v in boot.intervals.items()},
        "ci_method": how,
        "ci_replicates": {k: [round(float(x), 6) for x in v] for k, v in boot.replicates.items()},
    }


DEFINED_SHARE = 0.95  # a paired test needs this share of resamples defined in both runs


def paired_interval(a: np.ndarray, b: np.ndarray, confidence: float = CONFIDENCE) -> tuple[float, float] | None:
    """Paired bootstrap of ``a - b``: ``a`` and ``b`` are two runs' replicates of one metric on the
    same resamples of the same items; the percentile interval of their difference, resample by
    resample. None, "untested", where it cannot be computed: no replicates, replicates of
    different resamples, or fewer than :data:`DEFINED_SHARE` of the resamples defined in both
    runs (one pair, constant gold scores: the metric is undefined on every resample)."""
    if len(a) == 0 or len(a) != len(b):
        return None
    diff = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    defined = diff[np.isfinite(diff)]
    if len(defined) < DEFINED_SHARE * len(diff):
        return None
    alpha = 100 * (1 - confidence) / 2
    low, high = np.percentile(defined, [alpha, 100 - alpha])
    return float(low), float(high)


def significantly_better(a: np.ndarray, b: np.ndarray, confidence: float = CONFIDENCE) -> bool | None:
    """Whether ``a`` is better than ``b`` (higher is better): the paired interval of ``a - b``
    (:func:`paired_interval`) lies above 0. None, untested, where the interval cannot be
    computed. Untested is never "not different"."""
    interval = paired_interval(a, b, confidence)
    return None if interval is None else bool(interval[0] > 0)
