"""The RQE task: the XML and TSV readers, the dev-tuned threshold against a brute-force search
scored by scikit-learn, and bad input."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import accuracy_score

from clinsent.errors import InputError
from clinsent.tasks.rqe import Rqe, RqeSet, RqeSettings, best_threshold, read_mediqa_xml, read_rqe_tsv

DEMO = Path(__file__).resolve().parents[2] / "resources" / "demo"

XML = """<?xml version="1.0" encoding="UTF-8"?>
<RQE_Test_Set>
<pair pid="1" value="true"><chq>Is   it safe to take aspirin &amp; ibuprofen?
</chq><faq>Can I take aspirin with ibuprofen?</faq></pair>
<pair pid="2" value="False"><chq>What causes gout &lt;in women&gt;?</chq><faq>How is gout treated?</faq></pair>
</RQE_Test_Set>
"""


def test_mediqa_xml_reader_decodes_entities(tmp_path: Path) -> None:
    path = tmp_path / "rqe.xml"
    path.write_text(XML)
    data = read_mediqa_xml(path)
    assert data.questions1 == ["Is it safe to take aspirin & ibuprofen?", "What causes gout <in women>?"]
    assert data.labels.tolist() == [True, False]
    path.write_text(XML.replace('value="False"', 'value="maybe"'))
    with pytest.raises(InputError, match=r"pair 2 \(pid 2\): the label is neither true nor false") as err:
        read_mediqa_xml(path)
    assert "maybe" not in str(err.value)
    path.write_text(XML[:200])
    with pytest.raises(InputError, match="not well-formed XML"):
        read_mediqa_xml(path)


def test_tsv_reader(tmp_path: Path) -> None:
    path = tmp_path / "rqe.tsv"
    path.write_text("question1\tquestion2\tlabel\nA?\tB?\t1\nC?\tD?\tfalse\n")
    assert read_rqe_tsv(path).labels.tolist() == [True, False]


def _brute_force(scores: np.ndarray, labels: np.ndarray) -> float:
    cands = np.concatenate([scores, [scores.max() + 1.0]])
    return max(accuracy_score(labels, scores >= t) for t in cands)


@pytest.mark.parametrize("seed", range(6))
def test_best_threshold_matches_brute_force(seed: int) -> None:
    rng = np.random.default_rng(seed)
    scores = np.round(rng.normal(size=40), 1)  # rounded: ties happen
    labels = (scores + rng.normal(scale=0.8, size=40)) > 0
    threshold, acc = best_threshold(scores, labels)
    assert acc == pytest.approx(_brute_force(scores, labels))
    assert acc == pytest.approx(accuracy_score(labels, scores >= threshold))


def _tied_interval_midpoint(scores: np.ndarray, labels: np.ndarray) -> float:
    """An independent reading of the rule: the accuracy of every threshold on a grid of
    candidates (each distinct score, just above the top), the highest maximal run of best ones,
    and the midpoint of the scores that bound it."""
    cands = np.concatenate([[np.nextafter(scores.max(), np.inf)], np.unique(scores)[::-1]])
    accs = np.array([accuracy_score(labels, scores >= t) for t in cands])
    run = [int(np.argmax(accs == accs.max()))]
    while run[-1] + 1 < len(cands) and accs[run[-1] + 1] == accs.max():
        run.append(run[-1] + 1)
    if run == [0]:
        return float(cands[0])
    top = cands[max(run[0], 1)]  # the lowest score predicted true by the first threshold of the run
    below = cands[run[-1] + 1] if run[-1] + 1 < len(cands) else cands[-1]  # the score under the run
    return float((top + below) / 2.0)


@pytest.mark.parametrize("seed", range(6))
def test_ties_in_accuracy_take_the_midpoint_of_the_tied_interval(seed: int) -> None:
    rng = np.random.default_rng(seed)
    scores = np.round(rng.uniform(size=12), 1)  # few distinct scores: tied accuracies are common
    labels = rng.random(12) < 0.5
    assert best_threshold(scores, labels)[0] == pytest.approx(_tied_interval_midpoint(scores, labels))
    # by hand: true from 0.9 down and true from 0.6 down both score 3/4 (the tied 0.6s hold one
    # true and one false pair), every threshold in (0.3, 0.9] does: the midpoint 0.6, not 0.75
    scores, labels = np.array([0.9, 0.6, 0.6, 0.3]), np.array([True, True, False, False])
    assert best_threshold(scores, labels) == (pytest.approx(0.6), 0.75)
    # best cuts apart (a worse one between): the run with the highest scores, (0.7, 0.9]
    assert best_threshold(np.array([0.9, 0.7, 0.5, 0.3]), np.array([True, False, True, False])) == (
        pytest.approx(0.8),
        0.75,
    )


def test_threshold_edges() -> None:
    assert best_threshold(np.array([0.9, 0.8]), np.array([False, False]))[1] == 1.0
    assert best_threshold(np.array([0.9, 0.8]), np.array([True, True])) == (0.8, 1.0)


def test_score_applies_the_dev_threshold_to_test() -> None:
    dev = RqeSet(["a", "b", "c", "d"], ["A", "B", "C", "D"], np.array([True, True, False, False]))
    test = RqeSet(["a", "c"], ["B", "D"], np.array([True, True]))
    task = Rqe.from_data("rqe", (test, dev), RqeSettings())

    # 2-d vectors at chosen angles: cos(a,A)=1, cos(b,B)=0.8, cos(c,C)=0.2, cos(d,D)=0
    def unit(deg: float) -> list[float]:
        return [np.cos(np.radians(deg)), np.sin(np.radians(deg))]

    angles = {
        "a": 0,
        "A": 0,
        "b": 0,
        "B": np.degrees(np.arccos(0.8)),
        "c": 0,
        "C": np.degrees(np.arccos(0.2)),
        "d": 0,
        "D": 90,
    }
    texts = task.texts()
    vectors = np.array([unit(angles[t]) for t in texts])
    m = task.score(texts, vectors)
    assert m["dev_accuracy"] == 1.0 and m["threshold"] == pytest.approx(0.5)
    # test: cos(a,B)=0.8 -> true (right); cos(c,D)=0 -> false (wrong)
    assert m["accuracy"] == 0.5


def test_demo_rqe_files_read() -> None:
    for name in ("dev", "test"):
        data = read_mediqa_xml(DEMO / f"rqe.demo.{name}.xml")
        assert len(data.labels) == 150 and 0 < data.labels.mean() < 1
