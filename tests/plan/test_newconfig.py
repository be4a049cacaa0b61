"""A user's config on top of a paper's: `python -m clinsent new-config` writes every user file as a
REQUIRED key (filled by --set), the overlay is read on top of the tracked paper config, and a dry
run names each file still missing with its key."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from clinsent.commands.new_config import PAPERS, main, required_files
from clinsent.door.open import open_plan
from clinsent.door.overlay import keep_only, merge, resolve_base
from clinsent.errors import InputError
from clinsent.plan.jobs import job_counts

REPO = Path(__file__).resolve().parents[2]


def test_merge_is_recursive_for_mappings_and_replaces_everything_else() -> None:
    base = {"a": {"b": 1, "c": [1, 2]}, "d": "x", "e": {"f": 1}}
    assert merge(base, {"a": {"c": [3]}, "e": None, "g": 2}) == {"a": {"b": 1, "c": [3]}, "d": "x", "e": None, "g": 2}
    assert base == {"a": {"b": 1, "c": [1, 2]}, "d": "x", "e": {"f": 1}}  # the base is not touched


def test_a_base_chain_is_read_and_a_cycle_or_a_missing_base_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("a.yaml").write_text("results: r\nnotes: {path: n.csv, categories: [X]}\n")
    Path("b.yaml").write_text("base: a.yaml\nnotes: {path: m.csv}\n")
    config = {"base": "b.yaml", "seeds": [1]}
    assert resolve_base(config) == {"results": "r", "notes": {"path": "m.csv", "categories": ["X"]}, "seeds": [1]}
    Path("c.yaml").write_text("base: d.yaml\n")
    Path("d.yaml").write_text("base: c.yaml\n")
    with pytest.raises(InputError, match=r"^config: base: c\.yaml is its own base \(through c\.yaml -> d\.yaml\)"):
        resolve_base({"base": "c.yaml"})
    with pytest.raises(InputError, match=r"^config: base: nowhere\.yaml does not exist"):
        resolve_base({"base": "nowhere.yaml"})


BASE = {
    "base_models": {"bert": "b", "bio": "c"},
    "methods": {"lm": {}, "simcse": {}, "medse": {}},
    "report": {"base_model": "bio"},
    "tables": {
        "t": {
            "rows": [
                {"label": "A", "cells": ["lm", "simcse@bert"]},
                {"label": "B", "cells": ["medse@bert", None]},
                {"label": "C", "cells": [None, "medse"]},
            ]
        },
        "only_bert": {"rows": [{"label": "A", "cells": ["lm@bert"]}]},
        "cited": {"kind": "cited", "rows": [{"label": "X", "paper": [[None, "0.5"]]}]},
        "examples": {"kind": "retrieval_examples", "runs": ["lm", "medse@bert"]},
    },
    "figures": {
        "f": {"points": [{"label": "p", "run": "simcse"}, {"label": "q", "run": "lm@bert"}]},
        "series": {"kind": "fraction", "series": [{"label": "s", "points": [{"x": 1, "run": "medse"}]}]},
    },
    "finetune": {"ft": {"methods": ["lm", "medse"]}},
}


def test_keep_and_drop_leave_entries_out_with_every_cell_and_item_citing_them() -> None:
    out = keep_only(BASE, {"base_models": ["bio"]}, "b.yaml", None, {"methods": ["medse"]})
    assert list(out["base_models"]) == ["bio"] and list(out["methods"]) == ["lm", "simcse"]
    # a cell citing a gone method or base model empties; a row left with no cell leaves
    assert out["tables"]["t"]["rows"] == [{"label": "A", "cells": ["lm", None]}]
    assert "only_bert" not in out["tables"] and "series" not in out["figures"]  # nothing left: the entry leaves
    assert out["tables"]["cited"] == BASE["tables"]["cited"]  # paper numbers only: untouched (null cells stay)
    assert out["tables"]["examples"]["runs"] == ["lm"]
    assert out["figures"]["f"]["points"] == [{"label": "p", "run": "simcse"}]
    assert out["finetune"]["ft"]["methods"] == ["lm"]
    assert BASE["tables"]["t"]["rows"][0]["cells"] == ["lm", "simcse@bert"]  # the base is not touched
    # a cell without @ runs on the overlay's report.base_model when it names one
    moved = keep_only(BASE, {"base_models": ["bert"]}, "b.yaml", "bert")
    assert moved["tables"]["t"]["rows"][0]["cells"] == ["lm", "simcse@bert"]
    assert keep_only(BASE, {"base_models": ["bert"]}, "b.yaml")["tables"]["t"]["rows"] == [
        {"label": "A", "cells": [None, "simcse@bert"]},
        {"label": "B", "cells": ["medse@bert", None]},
    ]


def test_keep_names_what_the_base_lacks_and_needs_a_base(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(
        InputError,
        match=r"^config: keep\.methods: names 'simcce', which is not a key of the base's "
        r"methods \(closest: 'simcse'\)\. Fix: ",
    ):
        keep_only(BASE, {"methods": ["lm", "simcce"]}, "b.yaml")
    with pytest.raises(InputError, match=r"^config: drop\.seeds: the base has no mapping 'seeds'"):
        keep_only({**BASE, "seeds": [0]}, {}, "b.yaml", None, {"seeds": ["0"]})
    with pytest.raises(InputError, match=r"^config: keep: has no base config"):
        resolve_base({"keep": {"methods": []}})
    monkeypatch.chdir(tmp_path)
    Path("a.yaml").write_text(yaml.safe_dump(BASE))
    config = {"base": "a.yaml", "keep": {"methods": ["lm"]}, "drop": {"tables": ["cited"]}, "methods": {"new": {}}}
    resolved = resolve_base(config)
    assert list(resolved["methods"]) == ["lm", "new"] and "keep" not in resolved and "drop" not in resolved
    assert set(resolved["tables"]) == {"t", "only_bert", "examples"}


@pytest.mark.parametrize("paper", sorted(PAPERS))
def test_every_paper_s_user_files_are_required_keys(paper: str) -> None:
    keys = [k for k, _ in required_files(paper)]
    expected = {
        "demo": [],
        "medse": [
            "notes.path",
            "ner.model_pack",
            "eval_sets.medsts_train.path",
            "eval_sets.medsts_test.path",
            "eval_sets.medsts_test.gold",
        ],
    }
    if paper in expected:
        assert keys == expected[paper]
    else:
        assert keys and all(
            k.split(".")[0]
            in {"notes", "ner", "eval_sets", "training_data", "sentence_corpora", "doc_tasks", "ontology"}
            for k in keys
        )


def test_new_config_then_a_dry_run_names_what_is_missing_and_plans_the_paper(tmp_path: Path) -> None:
    out = tmp_path / "my-medse.yaml"
    assert main(["medse", "--out", str(out), "--set", "notes.path=resources/demo/NOTEEVENTS.demo.csv"]) == 0
    text = out.read_text()
    assert text.count("# REQUIRED") == 4 and "path: resources/demo/NOTEEVENTS.demo.csv\n" in text
    assert main(["medse", "--out", str(out)]) == 2  # never overwritten without --force
    assert main(["medse", "--out", str(REPO / "config" / "paper" / "mine.yaml")]) == 2
    cwd = os.getcwd()
    os.chdir(REPO)
    try:
        with pytest.raises(InputError) as err:
            open_plan(str(out), {})
        assert str(err.value).startswith("config: ner.model_pack: /path/to/medcat_v2_umls_pack.zip does not exist")
        assert "3 more missing: eval_sets.medsts_train.path: " in str(err.value)
        demo = [
            "ner.model_pack=null",
            "ontology.path=resources/demo/efo.demo.obo",
            "eval_sets.medsts_train.path=resources/demo/clinical_sts.demo.select.tsv",
            "eval_sets.medsts_test.path=resources/demo/clinical_sts.demo.test.tsv",
            "eval_sets.medsts_test.gold=null",
        ]
        assert (
            main(
                [
                    "medse",
                    "--out",
                    str(out),
                    "--force",
                    "--set",
                    "notes.path=resources/demo/NOTEEVENTS.demo.csv",
                    *(a for s in demo for a in ("--set", s)),
                ]
            )
            == 0
        )
        assert "# REQUIRED:" not in out.read_text()
        mine = open_plan(str(out), {})
        paper = open_plan("config/paper/medse.yaml", {"placeholders_ok": True})
        assert job_counts(mine)["train"] == job_counts(paper)["train"] and mine.run.results == "results-medse"
        assert yaml.safe_load((REPO / "config" / "paper" / "medse.yaml").read_text())["notes"]["path"].startswith(
            "/path/to/"
        )
    finally:
        os.chdir(cwd)


def test_own_notes_and_eval_file_on_no_paper(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`new-config own`: the notes and one STS table of one's own, the model's own pooling, and only
    the corpus stage SimCSE on S_all needs (no ontology, pack or NER); the files it names are
    counted as written (two notes files, two eval files: four), and no step is selected on the
    set the table reports."""
    out = tmp_path / "mine.yaml"
    second = tmp_path / "NOTEEVENTS.second.csv"  # a second notes file (a file listed twice is refused)
    second.write_bytes((REPO / "resources/demo/NOTEEVENTS.demo.csv").read_bytes())
    assert (
        main(
            [
                "own",
                "--out",
                str(out),
                "--set",
                f"notes.path=[resources/demo/NOTEEVENTS.demo.csv, {second}]",
                "--set",
                "eval_sets.mine.path=resources/demo/biosses.demo.tsv",
                "--set",
                "eval_sets.mine.scale_max=4",
                "--set",
                "eval_sets.mine_dev={format: table, path: resources/demo/biosses.demo.tsv, split: dev, scale_max: 4}",
            ]
        )
        == 0
    )
    assert f"wrote {out}: 4 user file(s) named, 0 still to set" in capsys.readouterr().out
    cwd = os.getcwd()
    os.chdir(REPO)
    try:
        plan = open_plan(str(out), {})
    finally:
        os.chdir(cwd)
    jobs = job_counts(plan)
    assert jobs["train"] == 6 and jobs["sentence_set_all"] == 1 and "ner" not in jobs and "ontology_terms" not in jobs
    assert {e.method.settings.pooling for e in plan.run.methods.values()} == {"model"}
