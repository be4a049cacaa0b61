"""The 95% intervals of score metrics: scipy's bootstrap over the items, checked against an
independent scipy.stats.bootstrap of the same statistic with the same resamples, and each task's
items against its own score."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy.stats import bootstrap, spearmanr

from clinsent.evaluation.bootstrap import (
    RESAMPLES,
    Items,
    bootstrap_items,
    interval_record,
    rowwise_spearman,
    significantly_better,
)


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
    got = bootstrap_items(items, seed=7).intervals["spearman"]
    ref = bootstrap(
        (pred, gold),
        lambda x, y: spearmanr(x, y).statistic,
        paired=True,
        vectorized=False,
        n_resamples=RESAMPLES,
        method="percentile",
        rng=np.random.default_rng(7),
    ).confidence_interval
    assert got == pytest.approx((ref.low, ref.high), abs=1e-12)
    point = spearmanr(pred, gold).statistic
    assert got[0] < point < got[1] and bootstrap_items(items, seed=7).intervals["spearman"] == got  # seeded
    assert bootstrap_items(items, seed=8).intervals["spearman"] != got


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
    assert significantly_better(good, bad) is True and significantly_better(bad, good) is False
    assert significantly_better(good, twin) is False and significantly_better(twin, good) is False
    # the hand computation: the 2.5th percentile of the per-resample differences
    assert (np.percentile(good - bad, 2.5) > 0) == significantly_better(good, bad)


@pytest.mark.parametrize("case", ["one pair", "constant gold"])
def test_a_paired_comparison_that_cannot_be_computed_is_untested_not_a_tie(case: str) -> None:
    """One pair, or gold scores that are all equal: Spearman is undefined on every resample, so
    the paired test is None ("untested"), never False ("not different"); a few undefined
    resamples among many leave it computed on the defined ones."""
    pred, gold = _sts_like(n=1 if case == "one pair" else 30)
    if case == "constant gold":
        gold = np.full_like(gold, 3.0)

    def record(p: np.ndarray) -> np.ndarray:
        items = Items(len(gold), ("spearman",), lambda i: rowwise_spearman(p[i], gold[i])[None], "pairs")
        return np.array(interval_record(items)["ci_replicates"]["spearman"], dtype=np.float64)

    a, b = record(pred), record(pred[::-1].copy())
    assert np.isnan(a).all()
    assert significantly_better(a, b) is None and significantly_better(b, a) is None
    good, bad = np.linspace(0.8, 0.9, 1000), np.linspace(0.1, 0.2, 1000)
    good[:10] = np.nan  # 1% undefined: still tested, on the rest
    assert significantly_better(good, bad) is True and significantly_better(bad, good) is False
    good[:100] = np.nan  # 10% undefined: untested
    assert significantly_better(good, bad) is None


def _check(task: Any, texts: list[str], vectors: np.ndarray, unit: str) -> None:
    items = task.items(texts, vectors)
    full = task.score(texts, vectors)
    assert items.full() == pytest.approx({m: full[m] for m in items.names})
    record = interval_record(items)
    assert set(record["ci"]) == set(items.names) and record["ci_method"] == {
        "method": "bootstrap (percentile)",
        "resamples": RESAMPLES,
        "confidence": 0.95,
        "unit": unit,
        "items": items.n,
        "seed": 0,
    }
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
    rqe = Rqe.from_data(
        "rqe", (RqeSet(a[:15], b[:15], labels[:15]), RqeSet(a[15:], b[15:], labels[15:])), RqeSettings()
    )
    _check(rqe, rqe.texts(), vectors, "test pairs")
    assert rqe.items(rqe.texts(), vectors).names == ("accuracy",)  # the threshold is fitted: no interval
    ret = Retrieval.from_data("ret", RetrievalSet(a[:20], b, [[i, i + 1] for i in range(20)], 0), RetrievalSettings())
    _check(ret, ret.texts(), vectors, "queries")


@pytest.mark.parametrize("positive", [None, 1])
def test_resampled_classification_metrics_are_scikit_learns(positive: int | None) -> None:
    """Accuracy, macro / weighted precision, recall and F1 (and binary F1) from per-resample
    confusion counts equal scikit-learn's on each resample, including resamples where a class is
    absent from the truth or the predictions."""
    from sklearn.metrics import accuracy_score, f1_score, precision_recall_fscore_support

    from clinsent.evaluation.bootstrap import rowwise_classification

    rng = np.random.default_rng(4)
    k = 2 if positive is not None else 4
    y = rng.integers(0, k, 40)
    pred = np.where(rng.random(40) < 0.7, y, rng.integers(0, k, 40))
    idx = rng.integers(0, 40, (50, 40))
    idx[0] = np.flatnonzero(y != 0)[0]  # a resample of one item: every other class absent
    got = rowwise_classification(y, pred, idx, k, positive)
    for row in range(len(idx)):
        t, p = y[idx[row]], pred[idx[row]]
        assert got["accuracy"][row] == pytest.approx(accuracy_score(t, p))
        for average in ("macro", "weighted"):
            want = precision_recall_fscore_support(t, p, average=average, zero_division=0)[:3]
            assert [got[f"{average}_{m}"][row] for m in ("precision", "recall", "f1")] == pytest.approx(want)
        if positive is not None:
            assert got["binary_f1"][row] == pytest.approx(f1_score(t, p, pos_label=positive, zero_division=0))


def test_a_probes_items_are_its_test_predictions(tmp_path: Path) -> None:
    """A probe fits once for its score and its items; the items give back its score on all of them."""
    import json

    from clinsent.tasks.probe import Probe, ProbeSettings

    rng = np.random.default_rng(2)
    rows = [
        {"text": f"s{i}", "label": str(i % 3 == 0), "split": "train" if i < 60 else "dev" if i < 75 else "test"}
        for i in range(90)
    ]
    path = tmp_path / "probe.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    task = Probe("p", ProbeSettings(path=str(path), format="jsonl", positive_label="True"))
    texts = task.texts()
    vectors = rng.normal(size=(len(texts), 5))
    vectors[:, 0] += np.array([2.0 if int(t[1:]) % 3 == 0 else 0.0 for t in texts])
    metrics, items = task.score_and_items(texts, vectors)
    assert metrics == task.score(texts, vectors)
    assert items.full() == pytest.approx({m: metrics[m] for m in items.names})
    assert items.names[0] == "f1" and "c" not in items.names and "dev_accuracy" not in items.names


def test_resampled_roc_auc_is_scikit_learns() -> None:
    """The area under the ROC curve of each resample (ties in the scores, items drawn twice)
    equals scikit-learn's on the resampled rows; NaN on a resample of one class."""
    from sklearn.metrics import roc_auc_score

    from clinsent.evaluation.bootstrap import rowwise_roc_auc

    rng = np.random.default_rng(5)
    positive = rng.random(30) < 0.4
    score = np.round(rng.random(30) + 0.3 * positive, 1)  # rounded: tied scores
    idx = rng.integers(0, 30, (40, 30))
    idx[0] = np.flatnonzero(positive)[0]
    got = rowwise_roc_auc(positive, score, idx)
    assert np.isnan(got[0])
    for row in range(1, len(idx)):
        assert got[row] == pytest.approx(roc_auc_score(positive[idx[row]], score[idx[row]]))


@pytest.mark.parametrize("n_classes", [2, 3])
def test_document_classification_items_are_its_metrics_on_each_resample(n_classes: int) -> None:
    """Every resample's figures are :func:`classification_metrics` of the resampled documents
    (macro over every class; ROC AUC NaN on a resample that lacks a class)."""
    from clinsent.evaluation.classification import METRICS, classification_items, classification_metrics

    rng = np.random.default_rng(6)
    y = rng.integers(0, n_classes, 24)
    proba = rng.dirichlet(np.ones(n_classes), 24)
    proba[np.arange(24), y] += rng.random(24)  # better than chance, not normalised
    items = classification_items(y, proba, n_classes)
    assert items.names == METRICS and items.full() == pytest.approx(classification_metrics(y, proba, n_classes))
    idx = rng.integers(0, 24, (30, 24))
    idx[0] = np.flatnonzero(y == 0)[0]
    got = items.statistic(idx)
    for row in range(len(idx)):
        want = classification_metrics(y[idx[row]], proba[idx[row]], n_classes)
        assert dict(zip(METRICS, got[:, row], strict=True)) == pytest.approx(want, nan_ok=True)
    assert np.isnan(got[METRICS.index("roc_auc"), 0])


def test_entity_items_are_the_micro_scores_of_the_resampled_sentences() -> None:
    from clinsent.evaluation.conll import entity_items, entity_scores

    rng = np.random.default_rng(7)
    tags = ["O", "B-a", "I-a", "B-b", "I-b"]
    gold = [list(rng.choice(tags, 6)) for _ in range(20)]
    pred = [[t if rng.random() < 0.7 else str(rng.choice(tags)) for t in g] for g in gold]
    items = entity_items(gold, pred)
    want = entity_scores(gold, pred)
    assert items.full() == pytest.approx({m: want[m] for m in items.names}) and "entities" not in items.names
    idx = rng.integers(0, 20, (10, 20))
    got = items.statistic(idx)
    for row in range(len(idx)):
        again = entity_scores([gold[i] for i in idx[row]], [pred[i] for i in idx[row]])
        assert got[:, row] == pytest.approx([again[m] for m in items.names])


def test_pair_scorers_items_give_their_scores() -> None:
    """A cross-encoder's pair scores: the items of STS and RQE give back score_pairs' figures."""
    from clinsent.evaluation.sts_data import StsSet
    from clinsent.tasks.rqe import Rqe, RqeSet, RqeSettings
    from clinsent.tasks.sts import Sts

    rng = np.random.default_rng(8)
    a, b = [f"a{i}" for i in range(30)], [f"b{i}" for i in range(30)]
    gold = rng.uniform(0, 5, 30)
    sts = Sts.from_data("sts", StsSet("sts", a, b, gold))
    predicted = [gold + rng.normal(0, 1.5, 30)]
    assert sts.pair_items(predicted).full() == pytest.approx(
        {k: sts.score_pairs(predicted)[k] for k in ("spearman", "pearson")}
    )
    labels = rng.random(30) < 0.5
    rqe = Rqe.from_data(
        "rqe", (RqeSet(a[:15], b[:15], labels[:15]), RqeSet(a[15:], b[15:], labels[15:])), RqeSettings()
    )
    scores = [labels[:15] + rng.normal(0, 0.8, 15), labels[15:] + rng.normal(0, 0.8, 15)]
    assert rqe.pair_items(scores).full() == pytest.approx({"accuracy": rqe.score_pairs(scores)["accuracy"]})


def test_a_metric_undefined_on_a_few_resamples_gets_the_interval_of_the_others(tmp_path: Path) -> None:
    """ROC AUC on 12 items with 1 positive: resamples without it are undefined (about 35%: NaN
    bounds, counted); with 3 positives few are (about 3%: the interval over the defined resamples)."""
    import json

    from clinsent.evaluation.bootstrap import UNDEFINED_SHARE, rowwise_roc_auc
    from clinsent.io.files import write_json
    from clinsent.report.paired import replicate_rows

    rng = np.random.default_rng(9)
    score = rng.random(12)
    for n_pos, defined in ((1, False), (3, True)):
        positive = np.arange(12) < n_pos
        items = Items(
            12,
            ("roc_auc", "mean"),
            lambda i, p=positive: np.stack([rowwise_roc_auc(p, score, i), score[i].mean(axis=-1)]),
            "items",
        )
        boot = bootstrap_items(items)
        reps = boot.replicates["roc_auc"]
        missing = int(np.isnan(reps).sum())
        assert boot.undefined == ({"roc_auc": missing} if missing else {}) and "mean" not in boot.undefined
        assert (0 < missing <= UNDEFINED_SHARE * RESAMPLES) == defined
        if defined:
            assert boot.intervals["roc_auc"] == pytest.approx(tuple(np.percentile(reps[~np.isnan(reps)], [2.5, 97.5])))
        else:
            assert np.isnan(boot.intervals["roc_auc"]).all()
        record = interval_record(items)
        assert record["ci_method"]["undefined_resamples"] == {"roc_auc": missing}
        # through the evaluate job's JSON (NaN written as null) into the report's replicates
        write_json(record, tmp_path / "m.json")
        back = json.loads((tmp_path / "m.json").read_text())
        rows = replicate_rows([{"method": "m", "base_model": "b", "seed": 0, "eval_set": "e", "metrics": back}])
        got = np.asarray(rows.set_index("metric").at["roc_auc", "replicates"])
        assert np.isnan(got).sum() == missing and np.allclose(got, reps, equal_nan=True, atol=1e-6)
