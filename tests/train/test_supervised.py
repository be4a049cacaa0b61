"""Supervised SimCSE: the loss by hand and against sentence-transformers' MNRL on the same batch,
the NLI readers (jsonl, tsv) and the triplets they build, and a short training run on rows."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from clinsent.config.sections import RunConfig
from clinsent.data.nli import read_nli_jsonl, triplets
from clinsent.data.rows import RowsData, TrainingRows
from clinsent.data.training_rows import read_training_rows
from clinsent.errors import InputError
from clinsent.evaluation.sts_data import StsSet
from clinsent.losses.supervised import supervised_info_nce
from clinsent.methods.config import resolve_methods
from clinsent.tasks.sts import Sts
from clinsent.train.trainer import train

DEMO = Path(__file__).resolve().parents[2] / "resources" / "demo"


def _by_hand(a: np.ndarray, p: np.ndarray, n: np.ndarray | None, tau: float, w: float = 0.0) -> float:
    def cos(x: np.ndarray, y: np.ndarray) -> float:
        return float(x @ y / np.linalg.norm(x) / np.linalg.norm(y))

    total = 0.0
    for i in range(len(a)):
        logits = [cos(a[i], p[j]) / tau for j in range(len(a))]
        if n is not None:
            logits += [cos(a[i], n[j]) / tau + (w if i == j else 0.0) for j in range(len(a))]
        total += -(logits[i] - math.log(sum(math.exp(v) for v in logits)))
    return total / len(a)


@pytest.mark.parametrize("weight", [0.0, 0.7])
def test_loss_equals_hand_computation(weight: float) -> None:
    g = torch.Generator().manual_seed(0)
    a, p, n = (torch.randn(4, 6, generator=g) for _ in range(3))
    got = supervised_info_nce(a, p, n, 0.05, weight).item()
    assert got == pytest.approx(_by_hand(a.numpy(), p.numpy(), n.numpy(), 0.05, weight), rel=1e-5)
    assert supervised_info_nce(a, p, None, 0.1).item() == pytest.approx(
        _by_hand(a.numpy(), p.numpy(), None, 0.1), rel=1e-5
    )


def test_loss_agrees_with_sentence_transformers_mnrl() -> None:
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

    g = torch.Generator().manual_seed(1)
    a, p, n = (torch.randn(8, 16, generator=g) for _ in range(3))
    mnrl = MultipleNegativesRankingLoss(model=torch.nn.Identity(), scale=20.0)  # type: ignore[arg-type]
    theirs = mnrl.compute_loss_from_embeddings([a, p, n], labels=None)  # type: ignore[arg-type]
    assert supervised_info_nce(a, p, n, 0.05).item() == pytest.approx(theirs.item(), abs=1e-5)
    theirs2 = mnrl.compute_loss_from_embeddings([a, p], labels=None)  # type: ignore[arg-type]
    assert supervised_info_nce(a, p, None, 0.05).item() == pytest.approx(theirs2.item(), abs=1e-5)


def test_nli_jsonl_triplets_and_counts(tmp_path: Path) -> None:
    rows = [
        ("P1", "E1", "entailment"),
        ("P1", "C1", "contradiction"),
        ("P1", "E2", "entailment"),
        ("P1", "N1", "neutral"),
        ("P2", "E3", "entailment"),
        ("P3", "C3", "contradiction"),
        ("P4", "X", "-"),
        ("P4", "E4", "Entailment"),
        ("P4", "C4", "CONTRADICTION"),
    ]
    path = tmp_path / "mli_train_v1.jsonl"
    path.write_text(
        "".join(
            json.dumps({"sentence1": s1, "sentence2": s2, "gold_label": g, "pairID": str(i)}) + "\n"
            for i, (s1, s2, g) in enumerate(rows)
        )
    )
    df, report = read_training_rows("nli", {"format": "nli_jsonl", "path": str(path)})
    assert df.values.tolist() == [["P1", "E1", "C1"], ["P1", "E2", "C1"], ["P4", "E4", "C4"]]
    assert report["premises_dropped"] == {"no_entailment": 1, "no_contradiction": 1}
    assert report["pairs_skipped"] == {"no_gold_label": 1} and report["triplets"] == 3
    # several files are read one after another
    df2, _ = read_training_rows("nli", {"format": "nli_jsonl", "path": [str(path), str(path)]})
    assert len(df2) == 6  # the same premises again: their hypotheses are pooled, each entailment used once


def test_nli_tsv_and_bad_labels(tmp_path: Path) -> None:
    tsv = tmp_path / "nli.tsv"
    tsv.write_text("premise\thypothesis\tlabel\nA\tB\tentailment\nA\tC\tcontradiction\n")
    df, _ = read_training_rows("t", {"format": "nli_tsv", "path": str(tsv)})
    assert df.values.tolist() == [["A", "B", "C"]]
    bad = tmp_path / "bad.jsonl"
    good = json.dumps({"sentence1": "a", "sentence2": "b", "gold_label": "neutral"}) + "\n"
    wrong = json.dumps({"sentence1": "secret note text", "sentence2": "b", "gold_label": "maybe"}) + "\n"
    bad.write_text(good + wrong + good + wrong * 6)
    with pytest.raises(
        InputError,
        match=r"bad\.jsonl:2: the label is not one of .*\(7 bad row\(s\), at lines "
        r"2, 4, 5, 6, 7, \.\.\.\)",
    ) as err:
        read_nli_jsonl(bad, {"no_gold_label": 0})
    assert "secret" not in str(err.value) and "maybe" not in str(err.value)
    missing = tmp_path / "missing.jsonl"
    missing.write_text(json.dumps({"sentence1": "a", "gold_label": "neutral"}) + "\n")
    with pytest.raises(InputError, match=r"missing\.jsonl:1: missing field\(s\) \['sentence2'\]"):
        read_nli_jsonl(missing, {"no_gold_label": 0})


def test_demo_nli_file_gives_triplets() -> None:
    df, report = read_training_rows("demo", {"format": "nli_jsonl", "path": str(DEMO / "mednli.demo.train.jsonl")})
    assert report["triplets"] == len(df) > 100 and report["premises_dropped"]["no_contradiction"] > 0
    assert list(df.columns) == ["anchor", "positive", "negative"] and (df["positive"] != df["negative"]).all()


def test_rows_batches_are_seeded_epochs() -> None:
    rows = pd.DataFrame({"anchor": [f"a{i}" for i in range(10)], "positive": [f"p{i}" for i in range(10)]})
    data = RowsData(rows, batch_size=4, seed=3)
    epoch0 = [i for step in (1, 2) for i in data.indices(step)]
    assert len(set(epoch0)) == 8 and data.indices(3) != data.indices(1)  # 2 full batches per epoch, then a reshuffle
    assert RowsData(rows, 4, 3).indices(5) == data.indices(5)
    assert RowsData(rows, 4, 4).indices(1) != data.indices(1)


def test_sup_simcse_trains_on_rows(tiny_bert: Path, tmp_path: Path) -> None:
    nli = pd.DataFrame(
        triplets(
            [(f"Patient {i} has disease {i}.", f"Disease {i} is present.", "entailment") for i in range(12)]
            + [(f"Patient {i} has disease {i}.", f"There is no disease {i}.", "contradiction") for i in range(12)]
        )[0]
    )
    cfg = {
        "methods": {
            "sup": {
                "objective": "sup_simcse",
                "train_data": "nli",
                "steps": 3,
                "batch_size": 4,
                "max_length": 32,
                "eval_every": 3,
                "checkpoint_every": 0,
                "learning_rate": 1e-3,
            }
        },
        "training_data": {"nli": {"format": "nli_jsonl", "path": "x"}},
    }
    method = resolve_methods(RunConfig.parse(cfg))["sup"].method
    need = method.data_need()
    assert isinstance(need, TrainingRows) and need.columns == ("anchor", "positive", "negative")
    rows_path = tmp_path / "rows.parquet"
    nli.to_parquet(rows_path)
    data = need.load({"rows": str(rows_path)}, seed=0)
    sts = Sts.from_data(
        "sel", StsSet("sel", [f"disease {i}" for i in range(6)], [f"illness {i}" for i in range(6)], np.arange(6.0))
    )
    result = train(method, str(tiny_bert), tmp_path / "m", {"sel": sts}, "sel", data=data, log=lambda *_: None)
    trained = result.curve[result.curve["step"] > 0]
    assert (trained["loss_supervised"] > 0).all() and result.selected_step == 3
    assert (tmp_path / "m" / "modules.json").exists()


def test_cls_mlp_keeps_the_trained_mlp_in_the_saved_model(tiny_bert: Path, tmp_path: Path) -> None:
    """Supervised SimCSE's recipe ([CLS] with MLP at test): the head trains with the encoder, is
    saved as a Dense with tanh, and the saved model (our loader and sentence-transformers alike)
    scores the selection set exactly as the trainer did at the selected step."""
    from sentence_transformers import SentenceTransformer

    from clinsent.embedding.vectors import load_encoder
    from clinsent.models.saved import SavedEncoder

    nli = pd.DataFrame(
        triplets(
            [(f"Patient {i} has disease {i}.", f"Disease {i} is present.", "entailment") for i in range(12)]
            + [(f"Patient {i} has disease {i}.", f"There is no disease {i}.", "contradiction") for i in range(12)]
        )[0]
    )
    cfg = {
        "methods": {
            "sup": {
                "objective": "sup_simcse",
                "train_data": "nli",
                "steps": 3,
                "batch_size": 4,
                "max_length": 32,
                "eval_every": 1,
                "checkpoint_every": 0,
                "learning_rate": 1e-3,
                "pooling": "cls_mlp",
            }
        },
        "training_data": {"nli": {"format": "nli_jsonl", "path": "x"}},
    }
    method = resolve_methods(RunConfig.parse(cfg))["sup"].method
    nli.to_parquet(tmp_path / "rows.parquet")
    data = method.data_need().load({"rows": str(tmp_path / "rows.parquet")}, seed=0)
    texts1, texts2 = [f"disease {i}" for i in range(6)], [f"illness {i} now" for i in range(6)]
    sts = Sts.from_data("sel", StsSet("sel", texts1, texts2, np.array([0.0, 5.0, 1.0, 4.0, 2.0, 3.0])))
    result = train(method, str(tiny_bert), tmp_path / "m", {"sel": sts}, "sel", data=data, log=lambda *_: None)
    library = SentenceTransformer(str(tmp_path / "m"), device="cpu")
    assert [type(m).__name__ for m in library] == ["Transformer", "Pooling", "Dense"]
    ours = load_encoder(tmp_path / "m", "cpu")
    assert isinstance(ours, SavedEncoder)
    texts = sts.texts()
    np.testing.assert_allclose(ours.encode(texts), library.encode(texts), rtol=1e-4, atol=1e-5)
    assert sts.score(texts, ours.encode(texts))["spearman"] == pytest.approx(result.selection_score, abs=1e-6)
    dense = library[2].linear.weight.detach()
    assert not torch.allclose(dense, torch.zeros_like(dense))
    with pytest.raises(InputError, match=r"methods\.base\.pooling: cls_mlp keeps an MLP head"):
        resolve_methods(RunConfig.parse({"methods": {"base": {"objective": "none", "pooling": "cls_mlp"}}}))
