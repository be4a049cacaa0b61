"""The 95% intervals of score metrics: scipy's bootstrap over the items, checked against an
independent scipy.stats.bootstrap of the same statistic with the same resamples, and each task's
items against its own score."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from scipy.stats import bootstrap, spearmanr

from clinsent.evaluation.bootstrap import (RESAMPLES, Items, interval_record, intervals, rowwise_spearman,
                                           significantly_better)


def _sts_like(n: int = 60, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    gold = rng.uniform(0, 5, n)
    return gold + rng.normal(0, 1.5, n), gold


def test_interval_equals_scipy_bootstrap_on_the_pairs() -> None:
    """Our vectorised rank correlation over every resample at once against scipy's own bootstrap
    of scipy's spearmanr, pair by pair, with the same resamples (ties in the gold, as in STS)."""
    pred, gold = _sts_like()
    gold = np.round(gold)  # ties: average ranks, as scipy
    items = Items(len(gold), ("spearman",), lambda i: rowwise_spearman(pred[i], gold[i])[None], "pairs")
    got = intervals(items, seed=7)["spearman"]
    ref = bootstrap((pred, gold), lambda x, y: spearmanr(x, y).statistic, paired=True, vectorized=False,
                    n_resamples=RESAMPLES, method="percentile", rng=np.random.default_rng(7)).confidence_interval
    assert got == pytest.approx((ref.low, ref.high), abs=1e-12)
    point = spearmanr(pred, gold).statistic
    assert got[0] < point < got[1] and intervals(items, seed=7) == intervals(items, seed=7)  # seeded
    assert intervals(items, seed=8)["spearman"] != got


def test_a_paired_comparison_on_the_same_resamples() -> None:
    """Two runs on the same pairs: one much closer to the gold is significantly better; two equal
    runs are not; the replicates of both come from the same resamples (the record's seed)."""
    pred, gold = _sts_like(n=80)
    rng = np.random.default_rng(3)
    worse = gold + rng.normal(0, 4.0, len(gold))
    same = pred + rng.normal(0, 1e-9, len(gold))

    def record(p: np.ndarray) -> np.ndarray:
        items = Items(len(gold), ("spearman",), lambda i: rowwise_spearman(p[i], gold[i])[None], "pairs")
        return np.array(interval_record(items)["ci_replicates"]["spearman"])

    good, bad, twin = record(pred), record(worse), record(same)
    assert significantly_better(good, bad) and not significantly_better(bad, good)
    assert not significantly_better(good, twin) and not significantly_better(twin, good)
    # the hand computation: the 2.5th percentile of the per-resample differences
    assert (np.percentile(good - bad, 2.5) > 0) == significantly_better(good, bad)


def _check(task: Any, texts: list[str], vectors: np.ndarray, unit: str) -> None:
    items = task.items(texts, vectors)
    full = task.score(texts, vectors)
    assert items.full() == pytest.approx({m: full[m] for m in items.names})
    record = interval_record(items)
    assert set(record["ci"]) == set(items.names) and record["ci_method"] == {
        "method": "bootstrap (percentile)", "resamples": RESAMPLES, "confidence": 0.95, "unit": unit, "items": items.n,
        "seed": 0}
    assert all(len(v) == RESAMPLES for v in record["ci_replicates"].values())
    assert all(lo <= full[m] <= hi for m, (lo, hi) in record["ci"].items())


def test_each_tasks_items_give_its_own_score_on_all_items() -> None:
    """The full set of items (no resampling) gives back the task's metrics: the items are what it
    scored (STS pairs, RQE test pairs at the dev threshold, retrieval queries)."""
    from clinsent.evaluation.sts_data import StsSet
    from clinsent.tasks.retrieval import Retrieval, RetrievalSet, RetrievalSettings
    from clinsent.tasks.rqe import Rqe, RqeSet, RqeSettings
    from clinsent.tasks.sts import Sts

    rng = np.random.default_rng(1)
    a, b = [f"a{i}" for i in range(30)], [f"b{i}" for i in range(30)]
    vectors = rng.normal(size=(60, 8))
    sts = Sts.from_data("sts", StsSet("sts", a, b, rng.uniform(0, 5, 30)))
    _check(sts, sts.texts(), vectors, "pairs")
    assert set(sts.items(sts.texts(), vectors).names) == {"spearman", "pearson"}  # not alignment or uniformity
    labels = rng.random(30) < 0.5
    rqe = Rqe.from_data("rqe", (RqeSet(a[:15], b[:15], labels[:15]), RqeSet(a[15:], b[15:], labels[15:])), RqeSettings())
    _check(rqe, rqe.texts(), vectors, "test pairs")
    assert rqe.items(rqe.texts(), vectors).names == ("accuracy",)  # the threshold is fitted: no interval
    ret = Retrieval.from_data("ret", RetrievalSet(a[:20], b, [[i, i + 1] for i in range(20)], 0), RetrievalSettings())
    _check(ret, ret.texts(), vectors, "queries")
