"""Methods and eval sets are read through their registries: per-method knobs, closest-match
errors, invalid combinations before any job runs, and params that hold only a method's own knobs."""

from __future__ import annotations

import copy
import dataclasses
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from clinsent.config.declare import keys, settings_schema
from clinsent.config.sections import RunConfig
from clinsent.errors import InputError
from clinsent.methods import METHODS
from clinsent.methods.config import resolve_methods
from clinsent.methods.knobs import MethodSettings
from clinsent.methods.medse import MedSE, MedSESettings
from clinsent.models.pooling import POOLINGS
from clinsent.tasks.config import resolve_eval_sets

from testkit import model_folder
from testkit.workflow import snakemake

REPO = Path(__file__).resolve().parents[2]
DEMO = yaml.safe_load((REPO / "config" / "config.yaml").read_text())


def _cfg(**methods: dict[str, Any]) -> dict[str, Any]:
    cfg = copy.deepcopy(DEMO)
    cfg["methods"].update(methods)
    return cfg


def _error_lines(run: subprocess.CompletedProcess[str]) -> list[str]:
    """stderr without Snakemake's notice that it loaded profiles/default (printed before the Snakefile is read)."""
    return [line for line in run.stderr.splitlines() if not line.startswith("Using workflow specific profile")]


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (
            {"objective": "medse", "lamda": 0.2},
            r"methods\.bad: unknown key 'lamda' \(closest: 'lambda'\)\. Fix: remove it or use one of the allowed "
            r"keys: .*lambda",
        ),
        (
            {"objective": "simcse", "lambda": 0.2},
            r"methods\.bad: 'lambda' is a knob of objective medse, not of this one\. Fix: .*allowed keys: "
            r"accumulate, augmentation,",
        ),
        (
            {"objective": "ct", "perturbation": "random_tokens"},
            r"methods\.bad: 'perturbation' is a knob of objective medse, not of this one",
        ),
        (
            {"objective": "simcse", "dropout": False},
            r"methods\.bad: augmentation dropout with dropout: false gives two identical views",
        ),
        ({"objective": "simsce"}, r"methods\.bad\.objective: unknown objective 'simsce' \(closest: 'simcse'\)"),
        ({"objective": "medse", "entity_encoder": "lstm"}, r"methods\.bad\.entity_encoder: 'lstm' is not valid"),
        (
            {"objective": "sup_simcse", "train_data": "demo_nil"},
            r"methods\.bad\.train_data: 'demo_nil' is not a key of training_data \['demo_nli'\] \(closest: "
            r"'demo_nli'\)",
        ),
    ],
)
def test_bad_method_entries(entry: dict[str, Any], message: str) -> None:
    with pytest.raises(InputError, match=message):
        resolve_methods(RunConfig.parse(_cfg(bad=entry)))


def test_training_block_and_eval_set_keys_are_checked() -> None:
    cfg = _cfg()
    cfg["training"]["stpes"] = 3
    with pytest.raises(InputError, match=r"config: training: unknown key 'stpes' \(closest: 'steps'\)"):
        resolve_methods(RunConfig.parse(cfg))
    cfg = _cfg()
    cfg["eval_sets"]["demo_rqe"]["gold"] = "x"
    with pytest.raises(InputError, match=r"eval_sets\.demo_rqe: 'gold' is a knob of task sts"):
        resolve_eval_sets(RunConfig.parse(cfg))
    cfg["eval_sets"]["demo_rqe"] = {"task": "rqe", "path": "x"}
    with pytest.raises(InputError, match=r"eval_sets\.demo_rqe: missing required key\(s\) \['dev_path'\]"):
        resolve_eval_sets(RunConfig.parse(cfg))


def test_params_hold_only_the_methods_own_knobs() -> None:
    entries = resolve_methods(RunConfig.parse(_cfg(ct={"objective": "ct"})))
    medse_only = set(keys(MedSESettings)) - set(keys(METHODS.get("simcse").settings_class))
    assert {"lambda", "entity_encoder", "definition_model"} <= medse_only
    for name in ("simcse", "ct", "none", "sup_simcse"):
        assert not medse_only & set(entries[name].train_params()["settings"]), name
    assert set(entries["none"].train_params()["settings"]) == set(keys(MethodSettings))
    # the shared training block reaches the knobs a method has, and only those
    assert entries["ct"].train_params()["settings"]["steps"] == DEMO["training"]["steps"]
    assert "temperature" not in entries["ct"].train_params()["settings"]


def test_changing_a_medse_default_changes_no_other_methods_params(monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = _cfg(ct={"objective": "ct"})
    before = {n: e.train_params() for n, e in resolve_methods(RunConfig.parse(cfg)).items()}

    meta = next(f for f in dataclasses.fields(MedSESettings) if f.name == "entity_layers").metadata

    @dataclasses.dataclass(frozen=True)
    class Changed(MedSESettings):
        entity_layers: int = dataclasses.field(default=2, metadata=meta)

    class MedSE2(MedSE):
        settings_class = Changed

    monkeypatch.setitem(METHODS._entries, "medse", MedSE2)  # noqa: SLF001
    after = {n: e.train_params() for n, e in resolve_methods(RunConfig.parse(cfg)).items()}
    assert after["medse"] != before["medse"] and after["medse"]["settings"]["entity_layers"] == 2
    assert all(after[n] == before[n] for n in before if n != "medse")


def test_schemas_come_from_the_settings() -> None:
    for name in METHODS.names():
        cls = METHODS.get(name).settings_class
        schema = settings_schema(cls)
        assert set(schema["properties"]) == set(keys(cls))
        assert schema["properties"]["pooling"]["enum"] == [
            *POOLINGS,
            "model",
        ]  # one pooling table, and the model's own
    assert settings_schema(MedSESettings)["properties"]["lambda"] == {
        "type": "number",
        "minimum": 0,
        "description": "weight of the entity-level loss (eq. 3)",
        "default": 0.1,
    }
    entry_schema = yaml.safe_load((REPO / "config" / "schema.yaml").read_text())["properties"]["methods"]
    assert set(entry_schema["additionalProperties"]["properties"]) == {
        "objective",
        "seeds",
        "postprocess",
        "whitening_dims",
        "selection_set",
        "init_from",
    }


def _dry_run(tmp: Path, cfg: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    (tmp / "c.yaml").write_text(yaml.safe_dump(cfg))
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    return snakemake(
        str(REPO),
        "--configfile",
        str(tmp / "c.yaml"),
        "-n",
        "--cores",
        "1",
        env=env,
        timeout=300,
    )


def _error_lines(run: subprocess.CompletedProcess[str]) -> list[str]:
    """stderr without Snakemake's notice that it loaded profiles/default (printed before the Snakefile is read)."""
    return [line for line in run.stderr.splitlines() if not line.startswith("Using workflow specific profile")]


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"objective": "medse", "lamda": 0.2}, "methods.bad: unknown key 'lamda' (closest: 'lambda')"),
        (
            {"objective": "simcse", "entity_encoder": "mean"},
            "methods.bad: 'entity_encoder' is a knob of objective medse",
        ),
        (
            {"objective": "ct", "perturbation": "random_tokens"},
            "methods.bad: 'perturbation' is a knob of objective medse",
        ),
        (
            {"objective": "simcse", "precision": "half"},
            "methods.bad.precision: 'half' is not one of the allowed values "
            "['auto', 'bf16', 'fp16', 'fp32'] ('half' means fp16). Fix: write "
            "precision: fp16",
        ),
    ],
)
def test_dry_run_rejects_bad_methods_before_any_job(tmp_path: Path, entry: dict[str, Any], message: str) -> None:
    cfg = _cfg(bad=entry)
    cfg["results"] = str(tmp_path / "results")
    run = _dry_run(tmp_path, cfg)
    # the first line after Snakemake's own notice of the workflow profile names the method, the key,
    # the allowed keys and the closest match
    assert run.returncode != 0 and _error_lines(run)[0].startswith(f"config: {message}"), run.stderr[-3000:]
    assert "rule ingest_notes" not in run.stdout and not (tmp_path / "results").exists()


@pytest.mark.parametrize(
    ("change", "first_line"),
    [
        (
            {"seedz": [0]},
            r"config: \(top level\): unknown key 'seedz' \(closest: 'seeds'\); allowed: base, base_models, .*seeds",
        ),
        (
            {"corpus": {"shards": "many"}},
            r"config: corpus\.shards: 'many' is not of type 'integer'\. Fix: see config/README\.md",
        ),
    ],
)
def test_a_schema_error_is_one_line_naming_the_key(tmp_path: Path, change: dict[str, Any], first_line: str) -> None:
    """A key the schema refuses: one line with the key, what is wrong and the closest allowed key
    (Snakemake's own report prints the whole schema, about 800 lines)."""
    cfg = {**_cfg(), **change, "results": str(tmp_path / "results")}
    run = _dry_run(tmp_path, cfg)
    assert run.returncode != 0 and re.match(first_line, _error_lines(run)[0]), run.stderr[-3000:]
    assert len(_error_lines(run)) == 1


def test_every_knob_is_documented() -> None:
    from clinsent.tasks import TASKS

    doc = (REPO / "config" / "README.md").read_text()
    for registry in (METHODS, TASKS):
        for name in registry.names():
            assert f"`{name}`" in doc, name
            for key in keys(registry.get(name).settings_class):  # type: ignore[attr-defined]
                assert f"`{key}`" in doc, (name, key)


def test_train_jobs_depend_only_on_what_the_curve_reads() -> None:
    cfg = _cfg()
    sets = resolve_eval_sets(RunConfig.parse(cfg))
    curve = sets["demo_select"].curve_params()["settings"]
    # Spearman does not read positive_share (scale_max: the reader checks each score against it)
    assert set(curve) == {
        "path",
        "format",
        "gold",
        "split",
        "split_file",
        "validation_share",
        "validation_seed",
        "scale_max",
    }
    cfg["evaluation"] = {"positive_share": 0.5}
    changed = resolve_eval_sets(RunConfig.parse(cfg))
    assert changed["demo_select"].curve_params() == sets["demo_select"].curve_params()
    assert changed["demo_select"].params() != sets["demo_select"].params()  # evaluate and embed do rerun
    assert sets["demo_rqe"].curve_params() == sets["demo_rqe"].params()


def test_local_extra_models_are_train_inputs(tmp_path: Path) -> None:
    """A local definition encoder folder is declared as an input of the MED-SE train job (a
    change to it reruns the job); a hub id's input is the folder the local download_model job
    fetches it into."""
    folder = model_folder(tmp_path / "definition-model")  # a model folder (an empty one is refused at the dry run)
    cfg = _cfg()
    cfg["results"] = str(tmp_path / "results")
    cfg["methods"] = {
        "medse": {"objective": "medse", "definition_model": str(folder)},
        "hub": {"objective": "medse", "definition_model": "dmis-lab/biobert-v1.1"},
    }
    entries = resolve_methods(RunConfig.parse(cfg))
    assert entries["medse"].method.extra_models() == [str(folder)]
    run = _dry_run(tmp_path, cfg)
    assert run.returncode == 0, run.stderr[-3000:]
    train_blocks = [b for b in run.stdout.split("\n\n") if "rule train:" in b]
    medse = [b for b in train_blocks if "models/medse/" in b]
    assert medse and all(str(folder) in b for b in medse)
    hub = [b for b in train_blocks if "models/hub/" in b]
    assert hub and all("downloads/hub/dmis-lab--biobert-v1.1" in b for b in hub)
    assert "output: downloads/hub/dmis-lab--biobert-v1.1" in run.stdout


@pytest.mark.parametrize(
    ("methods", "message"),
    [
        ({"b": {"objective": "simcse", "init_from": "aa"}}, r"methods\.b\.init_from: 'aa' is not a key of methods"),
        (
            {"u": {"objective": "none"}, "b": {"objective": "simcse", "init_from": "u"}},
            r"methods\.b\.init_from: method 'u' is not trained \(objective none\)",
        ),
        (
            {"a": {"objective": "simcse", "init_from": "b"}, "b": {"objective": "simcse", "init_from": "a"}},
            r"methods\.a\.init_from: the chain a -> b -> a is a cycle",
        ),
    ],
)
def test_init_from_must_name_a_trained_method(methods: dict[str, Any], message: str) -> None:
    cfg = _cfg()
    cfg["methods"] = methods
    with pytest.raises(InputError, match=message):
        resolve_methods(RunConfig.parse(cfg))


def test_sequential_training_is_a_dag_edge(tmp_path: Path) -> None:
    """init_from: the second job's input and start model are the first job's trained model."""
    cfg = _cfg()
    cfg["methods"] = {
        "nli": {"objective": "sup_simcse", "train_data": "demo_nli"},
        "then_simcse": {"objective": "simcse", "init_from": "nli"},
    }
    cfg.pop("corpus_embeddings")  # it cites the demo's medse
    cfg["results"] = str(tmp_path / "results")
    run = _dry_run(tmp_path, cfg)
    assert run.returncode == 0, run.stderr[-3000:]
    block = run.stdout.split("rule train:")
    chained = next(b for b in block if "models/then_simcse/" in b.split("output:")[1].split("\n")[0])
    assert f"{tmp_path}/results/models/nli/minilm/seed0/model" in chained.split("output:")[0]


def test_the_demo_config_checkpoints_every_trained_job() -> None:
    """`make demo` writes at least one checkpoint per train job, so the demo exercises resume."""
    from clinsent.methods.knobs import TrainedSettings

    entries = resolve_methods(RunConfig.parse(_cfg()))
    trained = [e.method.settings for e in entries.values() if isinstance(e.method.settings, TrainedSettings)]
    assert trained and all(0 < s.checkpoint_every < s.steps for s in trained)


def test_one_registry_contract() -> None:
    """``register("name", settings=S)``: the name and the settings class written once; a name
    registered twice refused, naming both classes and their files; a class without settings refused."""
    from dataclasses import dataclass

    from clinsent.methods import METHODS
    from clinsent.registry import Registry, RegistryError
    from clinsent.report.kinds.base import FIGURE_KINDS, TABLE_KINDS
    from clinsent.tasks.base import TASKS

    @dataclass(frozen=True)
    class S:
        x: int = 1

    reg: Registry[type] = Registry("thing", "things.<name>", settings=True)

    @reg.register("a", settings=S)
    class A:
        pass

    assert reg.get("a") is A and A.name == "a" and A.settings_class is S  # type: ignore[attr-defined]
    reg.register("a", settings=S)(A)  # the same class again (a module imported twice): kept
    with pytest.raises(
        RegistryError, match=r"thing 'a' is registered twice: by .*\.A \(.*test_registry\.py:\d+\) and by .*\.B"
    ):

        @reg.register("a", settings=S)
        class B:
            pass

    with pytest.raises(RegistryError, match=r"register\('old'\) without settings=; write "):

        @reg.register("old")
        class Old:
            settings_class = S

    assert "old" not in reg.names()
    with pytest.raises(RegistryError, match=r"says name = 'x' but is registered as 'y'"):

        @reg.register("y", settings=S)
        class Y:
            name = "x"

    # every built-in class carries the name it is registered under
    for registry in (METHODS, TASKS, TABLE_KINDS, FIGURE_KINDS):
        assert all(registry.get(n).name == n for n in registry.names()), registry.what


def test_looking_up_one_entry_imports_its_module_alone() -> None:
    """A kind, task, method or notes format is found in the module of its own name: importing the
    registry, or looking one entry up, imports no other built-in (listing the names imports them all)."""
    code = """
import sys
from clinsent.report.kinds import FIGURE_KINDS
from clinsent.tasks import TASKS
from clinsent.methods import METHODS
from clinsent.corpus.notes import NOTE_READERS
assert FIGURE_KINDS.get("bar").name == "bar" and TASKS.get("rqe").name == "rqe" and METHODS.get("ct").name == "ct"
assert NOTE_READERS.get("txt_dir") is not None
print(" ".join(m for m in sys.modules if m.startswith("clinsent.")))
"""
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    for package, wanted in (
        ("report.kinds", "bar"),
        ("tasks", "rqe"),
        ("methods", "ct"),
        ("corpus.note_formats", "txt_dir"),
    ):
        entries = {m.rpartition(".")[2] for m in run.stdout.split() if m.startswith(f"clinsent.{package}.")}
        assert wanted in entries and not entries & OTHERS[package], (package, sorted(entries))


OTHERS = {  # other built-ins of each registry, never loaded by that lookup
    "report.kinds": {"runs", "leaderboard", "tsne", "line", "heatmap", "box"},
    "tasks": {"sts", "probe", "retrieval", "doc_classification"},
    "methods": {"simcse", "medse", "mixcse", "mlm", "declutr"},
    "corpus.note_formats": {"noteevents_csv", "mimic_iv_note", "parquet"},
}
