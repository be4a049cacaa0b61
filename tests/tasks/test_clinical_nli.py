"""The clinical sentence-transformers NLI study's pieces: the `mnr` method against
sentence-transformers' MultipleNegativesRankingLoss on a whole model (mean pooling, same batch),
epochs over training rows, MRR over entailment candidates, the MedNLI classifier probe against
scikit-learn and numpy, and the table and chart helpers (metrics columns, p-values, bars,
confusion matrices, t-SNE points)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from clinsent.config.sections import RunConfig
from clinsent.errors import InputError
from clinsent.methods.config import resolve_methods
from clinsent.report.kinds.bar import bar_points
from clinsent.report.kinds.confusion import confusion_points
from clinsent.report.kinds.runs import paper_table
from clinsent.report.kinds.tsne import top_pairs, tsne_points
from clinsent.tasks.probe import Probe, ProbeSettings
from clinsent.tasks.retrieval import Retrieval, RetrievalSettings
from clinsent.train.trainer import steps_from_epochs

DEMO = Path(__file__).resolve().parents[2] / "resources" / "demo"


def _mnr(**knobs: object) -> object:
    cfg = {
        "methods": {"m": {"objective": "mnr", "train_data": "nli", **knobs}},
        "training_data": {"nli": {"format": "nli_jsonl", "path": "x"}},
    }
    return resolve_methods(RunConfig.parse(cfg))["m"]


def test_mnr_defaults_are_the_studys() -> None:
    s = _mnr().method.settings
    assert (s.pooling, s.batch_size, s.warmup_ratio, s.temperature, s.hard_negatives) == ("mean", 16, 0.1, 0.05, True)


@pytest.mark.parametrize("hard_negatives", [True, False])
def test_mnr_loss_equals_sentence_transformers_on_the_same_model_and_batch(
    tiny_bert: Path, hard_negatives: bool
) -> None:
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

    from clinsent.models.base import load_transformer, sentence_transformer
    from clinsent.models.encoder import Encoder

    method = _mnr(hard_negatives=hard_negatives, max_length=32).method
    transformer = load_transformer(str(tiny_bert), 32)
    st = sentence_transformer(transformer, "mean")
    st.eval()  # no dropout: both sides see the same network
    encoder = Encoder(transformer.model, transformer.tokenizer, "mean", 1, 32, torch.device("cpu"))
    loss = method.build_loss(encoder)
    rows = pd.DataFrame(
        {
            "anchor": [f"the patient has condition {i}" for i in range(5)],
            "positive": [f"condition {i} is present" for i in range(5)],
            "negative": [f"there is no condition {i}" for i in range(5)],
        }
    )
    ours = loss(loss.prepare(rows, torch.Generator().manual_seed(0)))["supervised"]
    theirs_loss = MultipleNegativesRankingLoss(st, scale=20.0)
    columns = ["anchor", "positive", "negative"] if hard_negatives else ["anchor", "positive"]
    features = [st.preprocess(rows[c].tolist()) for c in columns]
    theirs = theirs_loss(features, None)
    assert ours.item() == pytest.approx(theirs.item(), abs=1e-5)


def test_epochs_over_training_rows_become_steps() -> None:
    from clinsent.data.rows import RowsData

    entry = _mnr(epochs=10)
    assert "steps counted when the train job reads the rows" in entry.derived
    rows = pd.DataFrame({"anchor": list("abcdefghijklmnopqrstuvwxyz"[:21]), "positive": list("x" * 21)})
    data = RowsData(rows, 4, seed=0)  # 5 full batches per epoch
    assert steps_from_epochs(entry.method, data).settings.steps == 50
    plain = _mnr(steps=7).method
    assert steps_from_epochs(plain, data).settings.steps == 7


def test_mrr_over_entailment_candidates_matches_brute_force(tmp_path: Path) -> None:
    from scipy.stats import rankdata

    task = Retrieval("r", RetrievalSettings(path=str(DEMO / "mednli.demo.dev.jsonl"), candidates="entailment"))
    d = task.data
    pairs = [json.loads(line) for line in (DEMO / "mednli.demo.dev.jsonl").read_text().splitlines()]
    assert set(d.hypotheses) == {p["sentence2"] for p in pairs if p["gold_label"] == "entailment"}
    texts = task.texts()
    vectors = np.random.default_rng(3).normal(size=(len(texts), 16))
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    row = {t: i for i, t in enumerate(texts)}
    reciprocal = []
    for premise, relevant in zip(d.premises, d.relevant, strict=True):
        scores = np.array([unit[row[premise]] @ unit[row[h]] for h in d.hypotheses])
        rank = rankdata(-scores, method="min")  # ties in the premise's favour
        reciprocal.append(1.0 / min(rank[i] for i in relevant))
    assert task.score(texts, vectors)["mrr"] == pytest.approx(float(np.mean(reciprocal)), rel=1e-12)
    everything = Retrieval("r", RetrievalSettings(path=str(DEMO / "mednli.demo.dev.jsonl")))
    assert len(everything.data.hypotheses) > len(d.hypotheses)


def _mednli_probe(**knobs: object) -> Probe:
    return Probe(
        "cls",
        ProbeSettings(
            path=str(DEMO / "mednli.demo.train.jsonl"),
            format="nli_jsonl",
            inputs="pair",
            dev_path=str(DEMO / "mednli.demo.dev.jsonl"),
            test_path=str(DEMO / "mednli.demo.test.jsonl"),
            classifier="mlp",
            hidden=16,
            pair_features="concat",
            classes=("entailment", "neutral", "contradiction"),
            headline="accuracy",
            max_iter=300,
            **knobs,
        ),
    )


def test_mednli_probe_metrics_against_independent_computations() -> None:
    from sklearn.neural_network import MLPClassifier

    task = _mednli_probe()
    d = task.data
    assert set(d.splits) == {"train", "dev", "test"} and "-" not in d.labels  # "-" rows skipped
    texts = task.texts()
    vectors = np.random.default_rng(0).normal(size=(len(texts), 8))
    got = task.score(texts, vectors)
    # the same classifier, fitted independently; then every metric from the confusion counts by hand
    x = task.features(texts, vectors)
    assert x.shape[1] == 16  # concat: u, v
    y = np.asarray(d.labels)
    tr, te = d.rows("train"), d.rows("test")
    pred = MLPClassifier(hidden_layer_sizes=(16,), max_iter=300, random_state=0).fit(x[tr], y[tr]).predict(x[te])
    classes = ["entailment", "neutral", "contradiction"]
    counts = np.array([[np.sum((y[te] == t) & (pred == p)) for p in classes] for t in classes], dtype=float)
    for i, t in enumerate(classes):
        for j, p in enumerate(classes):
            assert got[f"confusion:{t}:{p}"] == counts[i, j]
    support, predicted = counts.sum(1), counts.sum(0)
    precision = np.divide(np.diag(counts), predicted, out=np.zeros(3), where=predicted > 0)
    recall = np.diag(counts) / support
    f1 = np.divide(2 * precision * recall, precision + recall, out=np.zeros(3), where=(precision + recall) > 0)
    assert got["accuracy"] == pytest.approx(np.trace(counts) / counts.sum())
    assert got["macro_precision"] == pytest.approx(precision.mean())
    assert got["macro_recall"] == pytest.approx(recall.mean())
    assert got["macro_f1"] == pytest.approx(f1.mean())
    w = support / support.sum()
    assert got["weighted_precision"] == pytest.approx((w * precision).sum())
    assert got["weighted_recall"] == pytest.approx(got["accuracy"])  # why the study's recall equals its accuracy
    assert got["weighted_f1"] == pytest.approx((w * f1).sum())
    assert set(task.metrics) >= {f"confusion:{t}:{p}" for t in classes for p in classes}


def test_probe_labels_outside_the_classes_are_named(tmp_path: Path) -> None:
    bad = tmp_path / "test.jsonl"
    bad.write_text(json.dumps({"sentence1": "secret premise", "sentence2": "b", "gold_label": "neutral"}) + "\n")
    with pytest.raises(InputError, match=r"1 label value\(s\) are not among classes") as err:
        Probe(
            "cls",
            ProbeSettings(
                path=str(DEMO / "mednli.demo.train.jsonl"),
                format="nli_jsonl",
                inputs="pair",
                dev_path=str(DEMO / "mednli.demo.dev.jsonl"),
                test_path=str(bad),
                classes=("entailment", "contradiction"),
            ),
        ).read()
    assert "secret" not in str(err.value) and "neutral" not in str(err.value)
    with pytest.raises(InputError, match="set inputs: pair, dev_path and test_path"):
        Probe("cls", ProbeSettings(path="x", format="nli_jsonl", inputs="pair"))


def _summary() -> pd.DataFrame:
    rows = []
    for seed, (r, p, mrr) in enumerate([(0.5, 1e-7, 0.1), (0.7, 3e-7, 0.3)]):
        for metric, value in (("pearson", r), ("pearson_p", p), ("spearman", r)):
            rows.append(("m", "b", seed, "bio", metric, value, 0))
        rows.append(("m", "b", seed, "mrr_set", "mrr", mrr, 0))
        for t in ("yes", "no"):
            for q in ("yes", "no"):
                rows.append(("m", "b", seed, "cls", f"confusion:{t}:{q}", float(seed + (t == q)), 0))
    return pd.DataFrame(rows, columns=["method", "base_model", "seed", "eval_set", "metric", "value", "step"])


def test_metrics_columns_and_p_values_in_paper_tables() -> None:
    table = {
        "eval_sets": ["bio"],
        "metrics": ["pearson", "pearson_p"],
        "rows": [
            {"label": "X", "cells": ["m@b"], "paper": [["0.57", "4.0e-10"]]},
            {"label": "Y", "cells": [None], "paper": [["0.1", None]]},
        ],
    }
    df = paper_table(_summary(), table, {"bio": "spearman"}, "b")
    assert list(df.columns) == ["row", "bio pearson", "bio pearson (paper)", "bio pearson_p", "bio pearson_p (paper)"]
    assert df.iloc[0]["bio pearson"] == "0.600 ± 0.141"
    assert df.iloc[0]["bio pearson_p"] == "2.00e-07 ± 1.41e-07"
    assert df.iloc[0]["bio pearson_p (paper)"] == "4.0e-10" and df.iloc[1]["bio pearson"] == "–"


def test_bar_and_confusion_points() -> None:
    bars = bar_points(
        _summary(),
        {"eval_set": "mrr_set", "bars": [{"label": "A", "run": "m@b", "paper": 0.05}, {"label": "B", "run": "z@b"}]},
        {"mrr_set": "mrr"},
        "b",
    )
    assert bars.iloc[0]["mean"] == pytest.approx(0.2) and bars.iloc[0]["std"] == pytest.approx(
        np.std([0.1, 0.3], ddof=1)
    )
    assert bars.iloc[1]["seeds"] == 0 and np.isnan(bars.iloc[1]["mean"])
    conf = confusion_points(
        _summary(), {"eval_set": "cls", "classes": ["yes", "no"], "panels": [{"label": "A", "run": "m@b"}]}, "b"
    )
    assert conf.set_index(["true", "predicted"])["count"].to_dict() == {
        ("yes", "yes"): 1.5,
        ("yes", "no"): 0.5,
        ("no", "yes"): 0.5,
        ("no", "no"): 1.5,
    }


def test_tsne_points_pair_the_top_scored_sentences() -> None:
    from clinsent.tasks.sts import Sts, StsSettings

    task = Sts("t", StsSettings(path=str(DEMO / "clinical_sts.demo.test.tsv"), format="n2c2_sts"))
    top = top_pairs(task, None, 50)
    assert top and all(task.data.scores[i] == task.data.scores.max() for i in top)
    texts = task.texts()
    rng = np.random.default_rng(0)
    before = rng.normal(size=(len(texts), 8))
    after = before.copy()
    row = {t: i for i, t in enumerate(texts)}
    for i in top:  # "training" pulls each top pair together
        after[row[task.data.sentences2[i]]] = after[row[task.data.sentences1[i]]] + 0.01 * rng.normal(size=8)
    points = tsne_points(
        task,
        {"before": (texts, before), "after": (texts, after)},
        {"before": "a", "after": "b", "max_pairs": 8, "perplexity": 3},
    )
    assert len(points) == 2 * min(8, len(top)) and {"x1", "y1", "x2", "y2"} <= set(points.columns)
    mean_cos = points.groupby("role")["cosine"].mean()
    assert mean_cos["after"] > 0.99 > mean_cos["before"]
