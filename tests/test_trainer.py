"""Training on a tiny random BERT: step selection, saved-model fidelity, determinism."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from clinsent.batching import Candidate, plan_batches
from clinsent.embed import embed_sts, load_model
from clinsent.evaluation.evaluate import pair_vectors
from clinsent.evaluation.metrics import cosine_rows, spearman
from clinsent.evaluation.sts_data import StsSet
from clinsent.train.settings import TrainSettings
from clinsent.train.trainer import train

DISEASES = ["heart failure", "diabetes", "asthma", "pneumonia", "sepsis", "gout", "anemia", "migraine"]


def _corpus() -> tuple[pd.DataFrame, pd.DataFrame]:
    sents, ents = [], []
    for i in range(32):
        d = DISEASES[i % len(DISEASES)]
        text = f"The patient number {i} has a history of {d} and was seen today."
        sents.append((i, text))
        start = text.index(d)
        ents.append((i, 0, start, start + len(d), f"T{i % len(DISEASES)}", f"A disease called {d}."))
    return (pd.DataFrame(sents, columns=["sent_id", "text"]),
            pd.DataFrame(ents, columns=["sent_id", "ent_idx", "start", "end", "term_id", "definition"]))


def _sts(name: str) -> StsSet:
    s1 = [f"History of {d}." for d in DISEASES]
    s2 = [f"The patient has {d}." for d in DISEASES[::-1]]
    return StsSet(name, s1, s2, np.linspace(0, 5, len(DISEASES)))


def _run(tiny_bert: Path, out: Path, objective: str, seed: int = 0) -> tuple[pd.DataFrame, object]:
    sentences, entities = _corpus()
    cands = [Candidate(int(r.sent_id), (0,), (r.term_id,)) for r in entities.itertuples()]
    settings = TrainSettings(objective=objective, steps=4, batch_size=6, max_length=32, learning_rate=1e-3,
                             eval_every=2, seed=seed, lam=0.5, entity_encoder="transformer")
    plan = plan_batches(cands, "replace", 6, 4, seed)
    eval_sets = {"sel": _sts("sel"), "test": _sts("test")}
    result = train(str(tiny_bert), settings, out, eval_sets, "sel", plan=plan, sentences=sentences,
                   entities=entities, log=lambda *_: None)
    return result.curve, result


def test_medse_selects_a_step_and_saves_it(tiny_bert: Path, tmp_path: Path) -> None:
    curve, result = _run(tiny_bert, tmp_path / "model", "medse")
    assert sorted(curve["step"].unique()) == [0, 2, 4]
    assert set(curve["eval_set"]) == {"sel", "test"}
    sel = curve[(curve["eval_set"] == "sel") & (curve["step"] > 0)]
    best = sel.loc[sel["spearman"].idxmax()]
    assert result.selected_step == int(best["step"])
    assert (curve.loc[curve["step"] > 0, "loss_entity"] > 0).all()
    # the saved model, loaded as a user would, reproduces the selected step's score
    model = load_model(tmp_path / "model")
    s = _sts("sel")
    emb = embed_sts(model, s)
    e1, e2 = pair_vectors(s, emb["text"].tolist(), np.stack(emb["vector"].to_list()))
    score = spearman(cosine_rows(e1, e2), s.scores)
    assert score == pytest.approx(result.selection_spearman, abs=1e-4)


def test_cpu_training_is_deterministic(tiny_bert: Path, tmp_path: Path) -> None:
    a, _ = _run(tiny_bert, tmp_path / "a", "simcse", seed=3)
    b, _ = _run(tiny_bert, tmp_path / "b", "simcse", seed=3)
    c, _ = _run(tiny_bert, tmp_path / "c", "simcse", seed=4)
    pd.testing.assert_frame_equal(a, b)
    assert not np.allclose(a["loss"].dropna(), c["loss"].dropna())


def test_none_objective_is_step_zero(tiny_bert: Path, tmp_path: Path) -> None:
    settings = TrainSettings(objective="none", pooling="cls", max_length=32)
    result = train(str(tiny_bert), settings, tmp_path / "m", {"sel": _sts("sel")}, "sel", log=lambda *_: None)
    assert result.selected_step == 0 and result.curve["step"].tolist() == [0]
    assert (tmp_path / "m" / "modules.json").exists()


def test_settings_from_config_overrides() -> None:
    s = TrainSettings.from_config({"steps": 10, "batch_size": 8, "learning_rate": 1e-5},
                                  {"objective": "medse", "lambda": 0.25, "steps": 20, "corpus": "s_ent"}, seed=2)
    assert (s.steps, s.batch_size, s.lam, s.seed, s.objective) == (20, 8, 0.25, 2, "medse")
