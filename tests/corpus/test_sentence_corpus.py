"""Plain sentence corpora (text lines or a parquet column), sampling, fractions, and epochs
derived from the corpus size when the config is read."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from clinsent.config.sections import RunConfig, SentenceCorpusEntry
from clinsent.corpus.sentences import (
    corpus_size,
    corpus_stats,
    fraction_subset,
    read_sentence_corpus,
    steps_for_epochs,
)
from clinsent.errors import InputError
from clinsent.methods.config import resolve_methods


def _text(tmp: Path, lines: list[str], name: str = "c.txt") -> str:
    path = tmp / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


def test_text_corpus_skips_blank_lines_and_keeps_unicode(tmp_path: Path) -> None:
    path = _text(tmp_path, ["First sentence.", "", "  什么是高血压？  ", "   ", "Third one."])
    df, report = read_sentence_corpus("c", {"path": path})
    assert df["text"].tolist() == ["First sentence.", "什么是高血压？", "Third one."]
    assert df["sent_id"].tolist() == [0, 1, 2] and set(df["set"]) == {"all"}
    assert report["files"] == [{"path": path, "sentences": 3, "skipped_blank": 2, "sampled": 3}]
    assert corpus_size("c", SentenceCorpusEntry(path=path)) == 3


def test_parquet_column_and_several_files(tmp_path: Path) -> None:
    pq_path = tmp_path / "s.parquet"
    pd.DataFrame({"sentence": ["a b", None, "c d e", ""]}).to_parquet(pq_path)
    txt = _text(tmp_path, ["x y"])
    df, report = read_sentence_corpus("c", {"path": [str(pq_path), txt], "column": "sentence"})
    assert df["text"].tolist() == ["a b", "c d e", "x y"] and df["source"].tolist() == [0, 0, 1]
    assert [f["skipped_blank"] for f in report["files"]] == [2, 0]
    with pytest.raises(InputError, match=r"s\.parquet: no column 'text' \(the file's columns: 'sentence'\)"):
        read_sentence_corpus("c", {"path": str(pq_path)})


def test_sample_is_seeded_and_exact(tmp_path: Path) -> None:
    path = _text(tmp_path, [f"sentence {i}" for i in range(100)])
    a, _ = read_sentence_corpus("c", {"path": path, "sample": 10, "sample_seed": 1})
    b, _ = read_sentence_corpus("c", {"path": path, "sample": 10, "sample_seed": 1})
    c, _ = read_sentence_corpus("c", {"path": path, "sample": 10, "sample_seed": 2})
    assert a.equals(b) and not a.equals(c) and len(a) == 10 and a["text"].is_unique
    assert corpus_size("c", SentenceCorpusEntry(path="/nowhere.txt", sample=10)) == 10  # no need to count
    with pytest.raises(InputError, match=r"sentence_corpora\.c\.sample: asks for 101 sentences, the corpus has 100"):
        read_sentence_corpus("c", {"path": path, "sample": 101})


def test_bad_corpora_are_named(tmp_path: Path) -> None:
    empty = _text(tmp_path, ["", "  "], "empty.txt")
    with pytest.raises(InputError, match=r"empty\.txt: the sentence corpus is empty after sampling"):
        read_sentence_corpus("c", {"path": empty})
    bad = tmp_path / "latin1.txt"
    bad.write_bytes("ok\nnot utf-8: caf\xe9\n".encode("latin-1"))
    with pytest.raises(InputError, match=r"latin1\.txt:2: byte 15 of the line is not UTF-8"):
        read_sentence_corpus("c", {"path": str(bad)})
    with pytest.raises(InputError, match="does not exist"):
        read_sentence_corpus("c", {"path": str(tmp_path / "missing.txt")})
    assert corpus_size("c", SentenceCorpusEntry(path=str(tmp_path / "missing.txt")), placeholders_ok=True) is None


def test_fraction_subsets_are_nested_and_sized() -> None:
    ids = np.arange(1000)
    small, mid, full = (fraction_subset(ids, f) for f in (0.01, 0.2, 1.0))
    assert len(small) == 10 and len(mid) == 200 and len(full) == 1000
    assert set(small) <= set(mid) <= set(full)
    assert np.array_equal(fraction_subset(ids, 0.2), mid)  # fixed: the same for every training seed
    with pytest.raises(InputError):
        fraction_subset(ids, 0.0)


def test_steps_and_stats() -> None:
    assert steps_for_epochs(1, 1_000_000, 128) == 7813  # the paper: one epoch over 1M sentences
    assert steps_for_epochs(2, 100, 32) == 7 and steps_for_epochs(0.01, 10, 128) == 1
    stats = corpus_stats(pd.DataFrame({"text": ["a b c", "d e"]}))
    assert stats == {"sentences": 2, "words": 5, "characters": 8, "mean_words": 2.5, "mean_characters": 4.0}


def _cfg(path: str, **methods: dict[str, Any]) -> dict[str, Any]:
    return {
        "sentence_corpora": {"pubmed": {"path": path}},
        "eval_sets": {"dev": {}},
        "selection_set": "dev",
        "training": {"epochs": 1, "batch_size": 8},
        "methods": copy.deepcopy(methods),
    }


def test_epochs_derive_steps_from_the_corpus(tmp_path: Path) -> None:
    path = _text(tmp_path, [f"s {i}" for i in range(50)])
    entries = resolve_methods(
        RunConfig.parse(
            _cfg(
                path,
                a={"objective": "simcse", "sentences": "pubmed"},
                b={"objective": "simcse", "sentences": "pubmed", "steps": 3},
                c={"objective": "simcse", "sentences": "pubmed", "epochs": 2, "fraction": 0.2},
            )
        )
    )
    assert entries["a"].method.settings.steps == 7 and "= 7 steps" in entries["a"].derived  # ceil(50 / 8)
    assert (
        entries["b"].method.settings.steps == 3
        and entries["b"].method.settings.epochs is None
        and not entries["b"].derived
    )
    assert entries["c"].method.settings.steps == 13  # the full corpus' steps, whatever the fraction
    plan = entries["c"].method.data_need()
    assert plan.key() == "pubmed-naive-none0-b8-n13-f0.2"


@pytest.mark.parametrize(
    ("method", "message"),
    [
        (
            {"objective": "simcse", "sentences": "pubmed", "steps": 3, "epochs": 1},
            r"methods\.m: sets both steps and epochs",
        ),
        (
            {"objective": "simcse", "sentences": "pubmd"},
            r"methods\.m\.sentences: 'pubmd' is neither notes nor a key .*closest: 'pubmed'",
        ),
        (
            {"objective": "simcse", "sentences": "pubmed", "corpus": "s_ent"},
            r"corpus s_ent.* sentence corpus 'pubmed' has none",
        ),
        ({"objective": "medse", "sentences": "pubmed"}, r"objective medse needs linked entities"),
        (
            {"objective": "simcse", "sentences": "pubmed", "fraction": 0.1},
            r"fraction 0\.1 of sentence corpus 'pubmed' is 5 sentences, fewer than a batch of 8",
        ),
        ({"objective": "simcse"}, r"methods\.m\.epochs: epochs needs a sentence corpus"),
        (
            {"objective": "simcse", "sentences": "pubmed", "selection_set": "tset"},
            r"methods\.m\.selection_set: 'tset' is not a key",
        ),
    ],
)
def test_bad_sources_stop_when_the_config_is_read(tmp_path: Path, method: dict[str, Any], message: str) -> None:
    path = _text(tmp_path, [f"s {i}" for i in range(50)])
    with pytest.raises(InputError, match=message):
        resolve_methods(RunConfig.parse(_cfg(path, m=method)))


def test_abstracts_are_split_into_sentences(tmp_path: Path) -> None:
    """``split: true``: each line is a document (a PubMed abstract), split by our ScispaCy splitter."""
    abstracts = tmp_path / "abstracts.txt"
    abstracts.write_text(
        "Aspirin reduced pain in 40 patients. The effect lasted 4 h. No adverse events were seen.\n\n"
        "We studied sepsis in the ICU (n = 12). Mortality was 25%.\n"
    )
    df, report = read_sentence_corpus("pmc", {"path": str(abstracts), "split": True})
    assert df["text"].tolist() == [
        "Aspirin reduced pain in 40 patients.",
        "The effect lasted 4 h.",
        "No adverse events were seen.",
        "We studied sepsis in the ICU (n = 12).",
        "Mortality was 25%.",
    ]
    assert report["files"][0]["documents"] == 2 and report["files"][0]["skipped_blank"] == 1
    assert (
        corpus_size("pmc", SentenceCorpusEntry(path=str(abstracts), split=True)) is None
    )  # known only after splitting
    assert corpus_size("pmc", SentenceCorpusEntry(path=str(abstracts), split=True, sample=3)) == 3
    cfg = {
        "sentence_corpora": {"pmc": {"path": str(abstracts), "split": True}},
        "methods": {"m": {"objective": "simcse", "sentences": "pmc", "epochs": 1}},
    }
    with pytest.raises(
        InputError,
        match=r"not known when the config is read .*documents to split.*Fix: give "
        r"sentence_corpora\.pmc\.sample",
    ):
        resolve_methods(RunConfig.parse(cfg))
