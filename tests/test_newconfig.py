"""A user's config on top of a paper's: `python -m clinsent new-config` writes every user file as a
REQUIRED key (filled by --set), the overlay is read on top of the tracked paper config, and a dry
run names each file still missing with its key."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from clinsent.errors import InputError
from clinsent.newconfig import PAPERS, main, required_files
from clinsent.overlay import merge, resolve_base
from clinsent.plan import _load_config, build_plan

REPO = Path(__file__).resolve().parents[1]


def test_merge_is_recursive_for_mappings_and_replaces_everything_else() -> None:
    base = {"a": {"b": 1, "c": [1, 2]}, "d": "x", "e": {"f": 1}}
    assert merge(base, {"a": {"c": [3]}, "e": None, "g": 2}) == {"a": {"b": 1, "c": [3]}, "d": "x", "e": None, "g": 2}
    assert base == {"a": {"b": 1, "c": [1, 2]}, "d": "x", "e": {"f": 1}}  # the base is not touched


def test_a_base_chain_is_read_and_a_cycle_or_a_missing_base_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
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


@pytest.mark.parametrize("paper", sorted(PAPERS))
def test_every_paper_s_user_files_are_required_keys(paper: str) -> None:
    keys = [k for k, _ in required_files(paper)]
    expected = {"demo": [], "medse": ["notes.path", "ner.model_pack", "eval_sets.medsts_train.path",
                                      "eval_sets.medsts_test.path", "eval_sets.medsts_test.gold"]}
    if paper in expected:
        assert keys == expected[paper]
    else:
        assert keys and all(k.split(".")[0] in {"notes", "ner", "eval_sets", "training_data", "sentence_corpora",
                                                  "doc_tasks", "ontology"} for k in keys)


def test_new_config_then_a_dry_run_names_what_is_missing_and_plans_the_paper(tmp_path: Path) -> None:
    out = tmp_path / "my-medse.yaml"
    assert main(["medse", "--out", str(out), "--set", "notes.path=resources/demo/NOTEEVENTS.demo.csv"]) == 0
    text = out.read_text()
    assert text.count("# REQUIRED") == 4 and 'path: "resources/demo/NOTEEVENTS.demo.csv"\n' in text
    assert main(["medse", "--out", str(out)]) == 1  # never overwritten without --force
    assert main(["medse", "--out", str(REPO / "config" / "paper" / "mine.yaml")]) == 1
    cwd = os.getcwd()
    os.chdir(REPO)
    try:
        with pytest.raises(InputError) as err:
            build_plan(_load_config(str(out), {}))
        assert str(err.value).startswith("config: ner.model_pack: /path/to/medcat_v2_umls_pack.zip does not exist")
        assert "3 more missing: eval_sets.medsts_train.path: " in str(err.value)
        demo = ["ner.model_pack=null", "ontology.path=resources/demo/efo.demo.obo",
                "eval_sets.medsts_train.path=resources/demo/clinical_sts.demo.select.tsv",
                "eval_sets.medsts_test.path=resources/demo/clinical_sts.demo.test.tsv", "eval_sets.medsts_test.gold=null"]
        assert main(["medse", "--out", str(out), "--force", "--set", "notes.path=resources/demo/NOTEEVENTS.demo.csv",
                     *(a for s in demo for a in ("--set", s))]) == 0
        assert "# REQUIRED:" not in out.read_text()
        mine = build_plan(_load_config(str(out), {}))
        paper = build_plan(_load_config("config/paper/medse.yaml", {"placeholders_ok": True}))
        assert mine.jobs()["train"] == paper.jobs()["train"] and mine.results == "results-medse"
        assert yaml.safe_load((REPO / "config" / "paper" / "medse.yaml").read_text())["notes"]["path"].startswith("/path/to/")
    finally:
        os.chdir(cwd)
