"""One typed config: every key declared once (clinsent.config.sections), the schema and the
README's key table generated from the declarations, the mapping parsed once at the door and read
typed below it, and an entry that crosses into a job's params given back exactly as validated."""

from __future__ import annotations

import copy
import dataclasses
import os
import re
import typing
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from clinsent.config.declare import Open, build, config_key, default_of, to_params
from clinsent.config.sections import (
    DocTaskEntry,
    Documents,
    EvalSetConfig,
    Evaluation,
    FigureConfig,
    FinetuneConfig,
    MethodConfig,
    ModelCard,
    Notes,
    RunConfig,
    SentenceCorpusEntry,
    TableConfig,
    Training,
    TrainingDataEntry,
)
from clinsent.door.open import open_config
from clinsent.generate import schema as schema_module
from clinsent.plan.checks import build_plan

REPO = Path(__file__).resolve().parents[2]
CONFIGS = sorted(
    p for p in [*REPO.glob("config/*.yaml"), *REPO.glob("config/paper/*.yaml")] if p.stem not in ("schema",)
)
CONFIGS = [p for p in CONFIGS if "base_models" in p.read_text() or "base:" in p.read_text()]


def _declared(cls: type) -> Iterator[tuple[str, dataclasses.Field[Any], type]]:
    """(path, field, owner) of every key of a declared section, nested sections and entries too."""
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        yield config_key(f), f, cls
        inner = [hints[f.name], *typing.get_args(hints[f.name])]
        for arg in inner:
            for candidate in (arg, *typing.get_args(arg)):
                if dataclasses.is_dataclass(candidate):
                    for path, g, owner in _declared(candidate):
                        yield f"{config_key(f)}.{path}", g, owner


def test_the_schema_file_is_the_declarations_written_out() -> None:
    assert schema_module.main(["--check"]) == 0, "config/schema.yaml is stale: run python -m clinsent.generate.schema"
    first = (REPO / "config" / "schema.yaml").read_text().splitlines()[0]
    assert first.startswith("# GENERATED from the declarations in src/clinsent/config/sections.py")


def test_the_check_fails_on_a_hand_edit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    edited = tmp_path / "schema.yaml"
    edited.write_text((REPO / "config" / "schema.yaml").read_text().replace("default: 10000", "default: 9999"))
    monkeypatch.setattr(schema_module, "SCHEMA", edited)
    assert schema_module.main(["--check"]) == 1


def test_every_declared_key_has_one_line_of_meaning() -> None:
    undocumented = [path for path, f, _ in _declared(RunConfig) if not str(f.metadata.get("doc", "")).strip()]
    sections = {path for path, f, _ in _declared(RunConfig) if "." not in path}
    assert len(sections) == len(dataclasses.fields(RunConfig)) > 30
    assert not undocumented, undocumented


def test_no_default_of_a_section_is_written_twice() -> None:
    """The modules that read a section take its defaults from the declaration: the old copies
    (the notes format's, the corpus embeddings', the documents' and document tasks') are gone."""
    keys = "format|block_mb|chunk|batch_size|train_per_class|downstream_share"
    pattern = re.compile(rf"""\.get\(\s*["']({keys})["']\s*,\s*(?=\S)(?!["']n/a)""")
    found = [
        f"{f.relative_to(REPO)}:{n}"
        for f in (REPO / "src/clinsent").rglob("*.py")
        for n, line in enumerate(f.read_text().splitlines(), 1)
        if pattern.search(line)
    ]
    assert not found, found


def test_parsing_types_every_section_and_fills_the_declared_defaults() -> None:
    empty = RunConfig.parse({})
    for f in dataclasses.fields(RunConfig):
        expected = default_of(f)
        assert getattr(empty, f.name) == (expected if expected is not dataclasses.MISSING else None), f.name
    config = open_config(str(REPO / "config" / "config.yaml"), {})
    parts = RunConfig.parse(config)
    assert isinstance(parts.notes, Notes) and parts.notes.format == config["notes"]["format"]
    assert parts.corpus.mem_mb.ner == config["corpus"]["mem_mb"]["ner"]
    assert parts.seeds == tuple(config["seeds"]) and isinstance(parts.placeholders_ok, bool)
    assert all(isinstance(e, SentenceCorpusEntry) for e in parts.sentence_corpora.values())
    assert RunConfig.parse({"placeholders_ok": "true"}).placeholders_ok is True
    # the entries a registry completes are typed shells: their declared keys typed, the rest its own
    sup = parts.methods["sup_simcse"]
    assert isinstance(sup, MethodConfig) and sup.objective == "sup_simcse" and sup.knobs["train_data"] == "demo_nli"
    assert "objective" not in sup.knobs and isinstance(sup.knobs, Open)
    assert isinstance(parts.training, Training) and parts.training.threads == config["training"]["threads"]
    assert "threads" not in parts.training.shared and parts.training.shared["steps"] == config["training"]["steps"]
    assert all(isinstance(e, EvalSetConfig) for e in parts.eval_sets.values())
    assert all(isinstance(e, TableConfig) and e.caption for e in parts.tables.values())


def _untyped(tp: Any) -> bool:
    """A mapping whose values are not typed (``Any``, or mappings of ``Any``)."""
    origin = typing.get_origin(tp)
    if origin in (dict, Mapping) or tp in (dict, Mapping):
        args = typing.get_args(tp)
        return not args or args[1] is Any or _untyped(args[1])
    return any(_untyped(a) for a in typing.get_args(tp))


def test_no_section_of_the_parsed_config_is_an_untyped_mapping() -> None:
    """Every section and entry is a declared class; the only open part of one is its ``rest`` field
    (an Open mapping: the keys its registry types, a plugin's among them)."""
    untyped, open_fields = [], []
    for path, f, owner in _declared(RunConfig):
        hint = typing.get_type_hints(owner)[f.name]
        if _untyped(hint):
            untyped.append(path)
        if hint is Open:
            open_fields.append(path)
            assert f.metadata.get("rest") and getattr(owner, "OPEN", ""), path
    assert not untyped, untyped
    assert sorted(set(open_fields)) == [
        "eval_sets.options",
        "evaluation.shared",
        "figures.options",
        "finetune.options",
        "methods.knobs",
        "tables.options",
        "training.shared",
    ]


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.stem)
def test_an_entry_crosses_into_params_and_back_as_validated(path: Path) -> None:
    """to_params gives back the validated mapping, key order included (Snakemake compares a
    param by its repr, so reading the config typed reruns no job), and build reads it back."""
    cwd = os.getcwd()
    os.chdir(REPO)
    try:
        config = open_config(str(path), {"placeholders_ok": True})
    finally:
        os.chdir(cwd)
    parts = RunConfig.parse(config)
    pairs: list[tuple[Any, Mapping[str, Any], type]] = [
        (parts.documents, config["documents"], Documents),
        (parts.model_card, config["model_card"], ModelCard),
    ]
    if parts.notes is not None:
        pairs.append((parts.notes, config["notes"], Notes))
    pairs += [(parts.doc_tasks[n], e, DocTaskEntry) for n, e in config["doc_tasks"].items()]
    pairs += [(parts.sentence_corpora[n], e, SentenceCorpusEntry) for n, e in config["sentence_corpora"].items()]
    pairs += [(parts.training_data[n], e, TrainingDataEntry) for n, e in config["training_data"].items()]
    pairs += [(parts.training, config["training"], Training), (parts.evaluation, config["evaluation"], Evaluation)]
    for section, cls in (("methods", MethodConfig), ("eval_sets", EvalSetConfig), ("finetune", FinetuneConfig)):
        pairs += [(getattr(parts, section)[n], e, cls) for n, e in config[section].items()]
    pairs += [(parts.tables[n], e, TableConfig) for n, e in config["tables"].items()]
    pairs += [(parts.figures[n], e, FigureConfig) for n, e in config["figures"].items()]
    for typed, raw, cls in pairs:
        assert repr(to_params(typed)) == repr(dict(raw)), cls.__name__
        assert build(cls, to_params(typed)) == typed


class _Door(dict[str, Any]):
    """A validated config that stops any read of its keys once the door has parsed it."""

    closed = False

    def _check(self, key: object) -> None:
        if self.closed:
            raise AssertionError(f"the raw config read below the door: {key!r}")

    def __getitem__(self, key: str) -> Any:
        self._check(key)
        return super().__getitem__(key)

    def get(self, key: str, default: Any = None) -> Any:
        self._check(key)
        return super().get(key, default)

    def __contains__(self, key: object) -> bool:
        self._check(key)
        return super().__contains__(key)


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.stem)
def test_nothing_below_the_door_reads_the_raw_mapping(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every config's plan is built with a mapping that fails any read once it is parsed: the
    planner, the registries, the checks and the benchmark read the typed config alone."""
    parse = RunConfig.parse.__func__  # type: ignore[attr-defined]

    def parse_then_close(cls: type[RunConfig], config: Mapping[str, Any]) -> RunConfig:
        parts = parse(cls, config)
        if isinstance(config, _Door):
            config.closed = True
        return parts

    monkeypatch.setattr(RunConfig, "parse", classmethod(parse_then_close))
    monkeypatch.chdir(REPO)
    door = _Door(copy.deepcopy(open_config(str(path), {"placeholders_ok": True})))
    build_plan(door)
    assert door.closed
    with pytest.raises(AssertionError, match="below the door"):
        door.get("results")


def test_no_rule_or_job_script_reads_the_raw_mapping() -> None:
    """The rules read the typed config (``C``, the plan's), the job scripts their params."""
    raw = re.compile(r"\bconfig\[|\bconfig\.get\(|\bsmk\.config\b|\bsnakemake\.config\b")
    files = [REPO / "Snakefile", *(REPO / "workflow").rglob("*.smk"), *(REPO / "workflow").rglob("*.py")]
    found = [
        f"{f.relative_to(REPO)}:{n}: {line.strip()}"
        for f in files
        for n, line in enumerate(f.read_text().splitlines(), 1)
        if raw.search(line) and not line.lstrip().startswith("#")
    ]
    assert not found, found
    assert raw.search('x = smk.config["results"]') and raw.search("config.get('notes')")


def test_snakemake_compares_params_by_their_text_and_passes_over_untracked_ones() -> None:
    """What the params design rests on: Snakemake records a builtin param by its repr (so a param
    must keep its text for a job not to rerun) and leaves out any other object, so a setting
    passed as ``Untracked`` never reruns a job (its persistence's own serializer)."""
    from snakemake.persistence import UNREPRESENTABLE, PersistenceBase

    from clinsent.runner.untracked import Untracked

    serialize = PersistenceBase._serialize_param_builtin
    assert serialize(None, Untracked(ModelCard())) is UNREPRESENTABLE
    assert serialize(None, {"a": (1, 2)}) == "{'a': (1, 2)}"
    assert serialize(None, {"a": [1, 2]}) != serialize(None, {"a": (1, 2)})
