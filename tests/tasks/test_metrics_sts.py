"""Metrics against scipy and their definitions; STS readers for both formats."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from clinsent.errors import InputError
from clinsent.evaluation.metrics import alignment, pearson, rankdata, spearman, sts_metrics, uniformity

from testkit.readers import read_sts


def test_spearman_and_pearson_match_scipy_with_ties() -> None:
    rng = np.random.default_rng(0)
    for _ in range(20):
        x = rng.integers(0, 6, size=40).astype(float)  # many ties, like 0-5 gold scores
        y = x + rng.normal(0, 1.5, size=40)
        assert spearman(y, x) == pytest.approx(stats.spearmanr(y, x).statistic, abs=1e-12)
        assert pearson(y, x) == pytest.approx(stats.pearsonr(y, x).statistic, abs=1e-12)
    assert rankdata(np.array([3.0, 1.0, 3.0, 2.0])).tolist() == [3.5, 1.0, 3.5, 2.0]


def test_alignment_and_uniformity_definitions() -> None:
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=(6, 4)), rng.normal(size=(6, 4))
    na = a / np.linalg.norm(a, axis=1, keepdims=True)
    nb = b / np.linalg.norm(b, axis=1, keepdims=True)
    assert alignment(a, b) == pytest.approx(np.mean([np.sum((na[i] - nb[i]) ** 2) for i in range(6)]))
    pairs = [np.exp(-2 * np.sum((na[i] - na[j]) ** 2)) for i, j in itertools.combinations(range(6), 2)]
    assert uniformity(a) == pytest.approx(np.log(np.mean(pairs)))
    assert alignment(a, a) == pytest.approx(0.0)


def test_sts_metrics_positives_threshold() -> None:
    e = np.eye(3)
    gold = np.array([5.0, 4.0, 4.5])
    m = sts_metrics(e, e, gold, e, scale_max=5.0)
    assert m["n_positive_pairs"] == 2  # > 4 of 5, strictly
    assert m["alignment"] == pytest.approx(0.0)


def test_read_n2c2_and_sts_tsv(tmp_path: Path) -> None:
    n2c2 = tmp_path / "train.txt"
    n2c2.write_text('He said "no".\tPatient said no.\t4.5\nA b c.\tD e f.\t0\n')
    s = read_sts("x", n2c2, "n2c2_sts")
    assert s.sentences1 == ['He said "no".', "A b c."] and s.scores.tolist() == [4.5, 0.0]
    test = tmp_path / "test.txt"
    test.write_text("a\tb\nc\td\n")
    gold = tmp_path / "gold.txt"
    gold.write_text("3\n1.5\n")
    assert read_sts("t", test, "n2c2_sts", gold=gold).scores.tolist() == [3.0, 1.5]
    tsv = tmp_path / "sts.tsv"
    tsv.write_text("score\tsentence1\tsentence2\n2.0\tx\ty\n")
    assert read_sts("s", tsv, "sts_tsv").sentences2 == ["y"]


def test_sts_errors_name_the_row(tmp_path: Path) -> None:
    bad = tmp_path / "bad.txt"
    bad.write_text("a\tb\t1\nc\td\tfive\n")
    with pytest.raises(InputError, match=r"bad\.txt:2: the score field is not a number"):
        read_sts("b", bad, "n2c2_sts")
    with pytest.raises(InputError, match="header"):
        read_sts("b", bad, "sts_tsv")


def test_demo_sts_files() -> None:
    from testkit import DEMO

    sel = read_sts("s", DEMO / "clinical_sts.demo.select.tsv", "n2c2_sts")
    test = read_sts("t", DEMO / "clinical_sts.demo.test.tsv", "n2c2_sts")
    assert len(sel) + len(test) >= 200
    assert sel.scores.min() >= 0 and sel.scores.max() <= 5


def test_undefined_metrics_are_written_as_null_and_logged(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Constant embeddings give an undefined correlation: the metrics file stays strict JSON
    (null, not NaN) and the log names the keys and why."""
    import json
    import logging

    from clinsent.io.files import write_json

    same = np.ones((4, 3))
    metrics = sts_metrics(same, same, np.array([0.0, 1.0, 4.5, 5.0]), same, 5.0)
    assert np.isnan(metrics["pearson"]) and np.isnan(metrics["spearman"])
    out = tmp_path / "m.json"
    with caplog.at_level(logging.WARNING, logger="clinsent.io.files"):
        write_json({**metrics, "per_class": [{"f1": np.float32("nan")}, {"f1": np.float64(0.5)}]}, out)

    def refuse(constant: str) -> None:
        raise AssertionError(f"{constant} in strict JSON")

    data = json.loads(out.read_text(), parse_constant=refuse)
    assert data["pearson"] is None and data["spearman"] is None and data["pearson_p"] is None
    assert data["per_class"] == [{"f1": None}, {"f1": 0.5}] and data["uniformity"] == pytest.approx(
        metrics["uniformity"]
    )
    message = caplog.records[-1].getMessage()
    assert (
        "m.json" in message and "pearson" in message and "per_class.0.f1" in message and "written as null" in message
    )
