"""The `retrieval` task (issue 13's MRR evaluation): MRR and recall@k against a brute-force
computation with scipy's ranks, on a small NLI file."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import rankdata

from clinsent.errors import InputError
from clinsent.tasks.retrieval import Retrieval, RetrievalSettings, ranks

REPO = Path(__file__).resolve().parents[2]


def _nli(tmp: Path) -> Path:
    rows = []
    for i in range(12):
        rows.append({"sentence1": f"premise {i}", "sentence2": f"entailed {i}", "gold_label": "entailment"})
        rows.append({"sentence1": f"premise {i}", "sentence2": f"contradicted {i}", "gold_label": "contradiction"})
        rows.append(
            {"sentence1": f"premise {i}", "sentence2": f"neutral {i}", "gold_label": "neutral" if i % 4 else "-"}
        )
    rows.append({"sentence1": "premise 0", "sentence2": "entailed again 0", "gold_label": "entailment"})
    path = tmp / "dev.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_mrr_and_recall_match_a_brute_force_computation(tmp_path: Path) -> None:
    task = Retrieval("r", RetrievalSettings(path=str(_nli(tmp_path)), ks=(1, 3)))
    d = task.data
    assert len(d.premises) == 12 and len(d.hypotheses) == 12 * 3 - 3 + 1 and d.skipped == 3
    texts = task.texts()
    vectors = np.random.default_rng(0).normal(size=(len(texts), 8))
    metrics = task.score(texts, vectors)
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    expected_ranks = []
    for q, premise in enumerate(d.premises):
        sims = np.array([unit[texts.index(premise)] @ unit[texts.index(h)] for h in d.hypotheses])
        # scipy's "min" rank of the negated scores: 1 + the candidates strictly above
        best = min(rankdata(-sims, method="min")[j] for j in d.relevant[q])
        expected_ranks.append(best)
    expected = np.array(expected_ranks, dtype=float)
    assert metrics["mrr"] == pytest.approx(np.mean(1 / expected))
    assert metrics["recall@1"] == pytest.approx(np.mean(expected <= 1))
    assert metrics["recall@3"] == pytest.approx(np.mean(expected <= 3))
    assert task.metrics == ("mrr", "recall@1", "recall@3") and task.headline == "mrr"


def test_ranks_by_hand() -> None:
    scores = np.array([[0.9, 0.5, 0.7], [0.1, 0.1, 0.3]])
    assert ranks(scores, [[1], [0, 1]]).tolist() == [3, 2]  # ties count in the query's favour


def test_bad_retrieval_files(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_text(json.dumps({"sentence1": "p", "sentence2": "h", "gold_label": "contradiction"}) + "\n")
    with pytest.raises(InputError, match="no premise has an entailment hypothesis"):
        Retrieval("r", RetrievalSettings(path=str(path))).read()
    path.write_text(json.dumps({"sentence1": "p", "sentence2": "h", "gold_label": "maybe"}) + "\n")
    with pytest.raises(InputError, match=r"x\.jsonl:1: the label is not one of") as err:
        Retrieval("r", RetrievalSettings(path=str(path))).read()
    assert "maybe" not in str(err.value)
    with pytest.raises(InputError, match=r"eval_sets\.r\.ks"):
        Retrieval("r", RetrievalSettings(path=str(path), ks=(0,)))


def test_demo_mednli_file_as_a_retrieval_set() -> None:
    task = Retrieval("r", RetrievalSettings(path=str(REPO / "resources/demo/mednli.demo.train.jsonl")))
    assert len(task.data.premises) > 50 and task.statistics()["candidates"] == len(task.data.hypotheses)
