"""BIOSSES as users have it (pair tables with BLURB splits) and the frozen-embedding probe task."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score, f1_score

from clinsent.config.sections import RunConfig
from clinsent.errors import InputError
from clinsent.evaluation.sts_data import read_sts_table
from clinsent.tasks.config import resolve_eval_sets
from clinsent.tasks.probe import Probe, ProbeSettings

from testkit.readers import read_sts

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "resources" / "demo"


def _pairs(tmp: Path, rows: list[tuple[str, str, str, str]], header: str = "id\tsentence1\tsentence2\tscore") -> Path:
    path = tmp / "pairs.tsv"
    path.write_text("\n".join([header] + ["\t".join(r) for r in rows]) + "\n", encoding="utf-8")
    return path


def test_demo_biosses_has_blurbs_split_sizes() -> None:
    counts = {}
    for split in ("train", "dev", "test"):
        data, counts = read_sts_table("b", DEMO / "biosses.demo.tsv", split, None, 4.0)
        assert len(data) == {"train": 64, "dev": 16, "test": 20}[split]
        assert data.scores.min() >= 0 and data.scores.max() <= 4
    assert counts == {"train": 64, "dev": 16, "test": 20}


def test_csv_parquet_and_a_split_file_agree(tmp_path: Path) -> None:
    rows = pd.read_csv(DEMO / "biosses.demo.tsv", sep="\t", quoting=3, dtype=str)
    rows.to_csv(tmp_path / "b.csv", index=False)
    rows.drop(columns="split").to_parquet(tmp_path / "b.parquet")
    rows[["id", "split"]].to_csv(tmp_path / "split.tsv", sep="\t", index=False)
    tsv, _ = read_sts_table("b", DEMO / "biosses.demo.tsv", "dev", None, 4.0)
    csv_, _ = read_sts_table("b", tmp_path / "b.csv", "dev", None, 4.0)
    pq, counts = read_sts_table("b", tmp_path / "b.parquet", "dev", tmp_path / "split.tsv", 4.0)
    for other in (csv_, pq):
        assert other.sentences1 == tsv.sentences1 and np.allclose(other.scores, tsv.scores)
    assert counts == {"train": 64, "dev": 16, "test": 20}


def test_pair_ids_default_to_row_numbers(tmp_path: Path) -> None:
    path = _pairs(tmp_path, [("a", "b", "1"), ("c", "d", "2"), ("e", "f", "3")], "sentence1\tsentence2\tscore")
    (tmp_path / "split.tsv").write_text("id\tsplit\n1\ttest\n3\ttest\n2\tdev\n")
    data, counts = read_sts_table("b", path, "test", tmp_path / "split.tsv", 4.0)
    assert data.sentences1 == ["a", "e"] and counts == {"test": 2, "dev": 1}


@pytest.mark.parametrize(
    ("rows", "split", "split_file", "message"),
    [
        (
            [("1", "a", "b", "2.0")],
            "dev",
            None,
            r"pairs\.tsv: eval_sets\.b asks for split 'dev', the file has no split column",
        ),
        ([("1", "a", "b", "4.5")], None, None, r"pairs\.tsv:2: score 4\.5 is outside the scale \[0, 4\]"),
        ([("1", "a", "b", "-1")], None, None, r"pairs\.tsv:2: score -1 is outside the scale"),
        ([("1", "a", "b", "x")], None, None, r"pairs\.tsv:2: the score field is not a number"),
        ([("1", "a", "b", "nan")], None, None, r"pairs\.tsv:2: the score is nan \(not a finite number\)"),
        (
            [("1", "a", "b", "2")],
            "dev",
            "id\tsplit\n1\tdev\n7\ttest\n",
            r"split\.tsv:3: pair id '7' is not an id of the pair file",
        ),
        ([("1", "a", "b", "2")], "test", "id\tsplit\n1\tdev\n", r"no pair is in split 'test' \(splits: \['dev'\]\)"),
    ],
)
def test_bad_biosses_input_names_file_and_row(
    tmp_path: Path, rows: list[tuple[str, ...]], split: str | None, split_file: str | None, message: str
) -> None:
    path = _pairs(tmp_path, rows)  # type: ignore[arg-type]
    sf = None
    if split_file:
        sf = tmp_path / "split.tsv"
        sf.write_text(split_file)
    with pytest.raises(InputError, match=message):
        read_sts_table("b", path, split, sf, 4.0)


@pytest.mark.parametrize(
    ("score", "message"),
    [
        ("5.5", r"score 5\.5 is outside the scale \[0, 5\]"),
        ("7.5", r"score 7\.5 is outside the scale"),
        ("-1", r"score -1 is outside the scale"),
        ("nan", r"the score is nan \(not a finite number\)"),
        ("NaN", r"the score is nan"),
        ("inf", r"the score is inf"),
        ("", r"the score field is not a number"),
    ],
)
def test_sts_scores_outside_the_scale_or_not_finite_are_errors_at_read(
    tmp_path: Path, score: str, message: str
) -> None:
    """Every STS layout refuses the score at read time with file:line (nan used to pass and
    reach the metrics as NaN)."""
    n2c2 = tmp_path / "sts.tsv"
    n2c2.write_text(f"a\tb\t3.0\nc\td\t{score}\n")
    with pytest.raises(InputError, match=rf"sts\.tsv:2: {message}"):
        read_sts("s", n2c2, "n2c2_sts")
    headed = tmp_path / "headed.tsv"
    headed.write_text(f"sentence1\tsentence2\tscore\na\tb\t3.0\nc\td\t{score}\n")
    with pytest.raises(InputError, match=rf"headed\.tsv:3: {message}"):
        read_sts("s", headed, "sts_tsv")
    if not score:
        return  # a blank gold line is a missing score: the count check catches it
    pairs, gold = tmp_path / "test.tsv", tmp_path / "gold.txt"
    pairs.write_text("a\tb\nc\td\n")
    gold.write_text(f"3.0\n{score}\n")
    with pytest.raises(InputError, match=rf"gold\.txt:2: {message}"):
        read_sts("s", pairs, "n2c2_sts", gold=gold)


def test_split_needs_the_table_format_or_a_validation_share() -> None:
    """A split of a file without one is an error when the config is read (format table names
    its splits; other formats hold out a seeded validation share)."""
    with pytest.raises(InputError, match=r"eval_sets\.s\.split: format n2c2_sts: split 'dev' with validation_share 0"):
        resolve_eval_sets(
            RunConfig.parse(
                {
                    "eval_sets": {
                        "s": {"path": str(DEMO / "clinical_sts.demo.test.tsv"), "format": "n2c2_sts", "split": "dev"}
                    }
                }
            )
        )
    with pytest.raises(InputError, match="split_file needs format table"):
        resolve_eval_sets(RunConfig.parse({"eval_sets": {"s": {"path": "x", "format": "sts_tsv", "split_file": "y"}}}))


def _probe_file(tmp: Path, pairs: bool) -> Path:
    rng = np.random.default_rng(0)
    rows = []
    for i in range(60):
        split = "train" if i < 36 else "dev" if i < 48 else "test"
        label = str(i % 2)
        row = {"label": label, "split": split}
        if pairs:
            row.update(text1=f"问题{i}a", text2=f"问题{i}b")
        else:
            row["text"] = f"句子{i}"
        rows.append(row)
    rng.shuffle(rows)
    path = tmp / "probe.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def _vectors(texts: list[str], dim: int = 6) -> np.ndarray:
    """Vectors whose first coordinate carries the label (i % 2) plus noise: linearly separable."""
    rng = np.random.default_rng(1)
    out = rng.normal(size=(len(texts), dim))
    for k, t in enumerate(texts):
        i = int("".join(ch for ch in t if ch.isdigit()))
        out[k, 0] = (3.0 if i % 2 else -3.0) + 0.1 * out[k, 0]
    return out


def test_probe_on_single_sentences_matches_scikit_learn(tmp_path: Path) -> None:
    settings = ProbeSettings(path=str(_probe_file(tmp_path, pairs=False)), format="jsonl", headline="weighted_f1")
    task = Probe("p", settings)
    texts = task.texts()
    assert "句子0" in texts  # Chinese passes through untouched
    vectors = _vectors(texts)
    metrics = task.score(texts, vectors)
    d = task.data
    x = vectors[[texts.index(t) for t in d.texts1]]
    y = np.array(d.labels)
    tr, dv, te = (np.array([i for i, s in enumerate(d.splits) if s == n]) for n in ("train", "dev", "test"))
    accs = {
        c: accuracy_score(
            y[dv], LogisticRegression(C=c, max_iter=2000, random_state=0).fit(x[tr], y[tr]).predict(x[dv])
        )
        for c in settings.c_grid
    }
    best_c = max(settings.c_grid, key=lambda c: (accs[c], -settings.c_grid.index(c)))
    pred = LogisticRegression(C=best_c, max_iter=2000, random_state=0).fit(x[tr], y[tr]).predict(x[te])
    assert metrics["c"] == best_c and metrics["dev_accuracy"] == accs[best_c]
    assert metrics["f1"] == pytest.approx(f1_score(y[te], pred, pos_label="1"))
    assert metrics["weighted_f1"] == pytest.approx(f1_score(y[te], pred, average="weighted"))
    assert metrics["accuracy"] == 1.0  # separable by construction
    assert task.headline == "weighted_f1" and task.curve_score(texts, vectors) == metrics["weighted_f1"]
    assert task.statistics()["splits"] == {"train": 36, "dev": 12, "test": 12}


@pytest.mark.parametrize(
    ("features", "blocks", "separates"),
    [
        # SentEval's SICK-E / MRPC: np.c_[|A - B|, A * B]; the test file's classes hang on u and v themselves
        ("senteval", lambda u, v: [np.abs(u - v), u * v], False),
        ("u_v_absdiff_product", lambda u, v: [u, v, np.abs(u - v), u * v], True),
        ("concat", lambda u, v: [u, v], True),
    ],
)
def test_probe_pair_features(tmp_path: Path, features: str, blocks: Any, separates: bool) -> None:
    task = Probe(
        "p",
        ProbeSettings(
            path=str(_probe_file(tmp_path, pairs=True)), format="jsonl", inputs="pair", pair_features=features
        ),
    )
    texts = task.texts()
    vectors = _vectors(texts, dim=3)
    feats = task.features(texts, vectors)
    u, v = vectors[texts.index(task.data.texts1[0])], vectors[texts.index(task.data.texts2[0])]
    assert feats.shape == (60, 3 * len(blocks(u, v)))
    np.testing.assert_allclose(feats[0], np.concatenate(blocks(u, v)))
    assert (task.score(texts, vectors)["accuracy"] == 1.0) == separates


def test_probe_defaults_are_senteval_s() -> None:
    assert ProbeSettings(path="x").c_grid == tuple(2.0**t for t in range(-2, 4))  # SentEval: 2^-2 .. 2^3
    assert ProbeSettings(path="x").pair_features == "senteval"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("text\tlabel\tsplit\na\t1\ttrain\nb\t0\tdev\n", r"split 'test' has no rows"),
        ("text\tlabel\tsplit\na\t1\ttrain\nb\t\tdev\n", r"probe\.tsv:3: no value for \['label'\]"),
        ("text\tlabel\tsplit\na\t1\ttrain\nb\t1\tdev\nc\t0\ttest\n", r"the train split has 1 class"),
    ],
)
def test_bad_probe_files(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "probe.tsv"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(InputError, match=message):
        Probe("p", ProbeSettings(path=str(path))).read()


def test_binary_labels_without_the_positive_label_stop_before_f1_turns_into_macro_f1(tmp_path: Path) -> None:
    """yes/no labels with the default positive_label "1": the read stops naming the key (the
    values are not shown); with positive_label: yes, f1 is sklearn's binary F1 of "yes"."""
    rows = _probe_file(tmp_path, pairs=False).read_text(encoding="utf-8").replace('"label": "1"', '"label": "yes"')
    path = tmp_path / "labels.jsonl"
    path.write_text(rows.replace('"label": "0"', '"label": "no"'), encoding="utf-8")
    with pytest.raises(InputError) as error:
        Probe("qq", ProbeSettings(path=str(path), format="jsonl")).read()
    assert str(error.value).startswith(
        "config: eval_sets.qq.positive_label: '1' is not one of the two label values "
        f"of {path} (values not shown; 0 differ from it only in case or spaces)"
    )
    assert "yes" not in str(error.value).lower() and "Fix: set `positive_label`" in str(error.value)
    task = Probe("qq", ProbeSettings(path=str(path), format="jsonl", positive_label="yes"))
    texts = task.texts()
    vectors = _vectors(texts)
    vectors[:, 0] += np.random.default_rng(3).normal(scale=4.0, size=len(texts))  # not separable: f1s differ
    metrics = task.score(texts, vectors)
    d = task.data
    x = vectors[[texts.index(t) for t in d.texts1]]
    y = np.array(d.labels)
    tr, te = (np.array([i for i, s in enumerate(d.splits) if s == n]) for n in ("train", "test"))
    pred = LogisticRegression(C=metrics["c"], max_iter=2000, random_state=0).fit(x[tr], y[tr]).predict(x[te])
    assert metrics["f1"] == pytest.approx(f1_score(y[te], pred, pos_label="yes"))
    assert metrics["f1"] != pytest.approx(metrics["macro_f1"])


def test_eval_set_base_models_are_checked() -> None:
    cfg = {
        "base_models": {"bert": "x"},
        "eval_sets": {"s": {"path": "p", "format": "n2c2_sts", "base_models": ["bret"]}},
    }
    with pytest.raises(
        InputError, match=r"eval_sets\.s\.base_models: 'bret' is not a key of base_models.*closest: 'bert'"
    ):
        resolve_eval_sets(RunConfig.parse(cfg))
    cfg["eval_sets"]["s"]["base_models"] = ["bert"]
    entry = resolve_eval_sets(RunConfig.parse(cfg))["s"]
    assert entry.evaluates("bert") and not entry.evaluates("chinese")
