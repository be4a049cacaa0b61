"""At the door, before the schema: the benchmark's ``models:`` and ``benchmark:`` sections read
into the grid every paper config uses (and optional eval sets whose files are missing left
out), so scoring a model is the same train (here: wrap), embed and evaluate jobs:

- each model becomes a base model (a Hugging Face id, fetched by the local rule
  ``download_model``; a local folder; ``pkg:`` a packaged one; or ``run: method@base_model`` with
  ``results:`` and ``seed:``, the model a paper config trained: that results folder's saved model);
  ``run:`` without ``results:`` is a run of this config's own ``methods``, cited as it is (trained
  here, every seed);
- each pooling in use becomes an untrained method ``as_is_<pooling>`` (``objective: none``, one
  seed): ``pooling: model`` (the default) is the model's own sentence-transformers pooling
  (:mod:`clinsent.models.st_config`), else one of ours, given per model;
- every table and figure the config declares whose kind cites models on tasks (its keys include
  ``models`` and ``eval_sets``: ``config/benchmark.yaml`` declares a leaderboard table and a
  heatmap figure, as a user's config would) gets, where it leaves them out, the row
  ``as_is_<pooling>@<model>`` of every model, with the papers' published figures (``paper:``)
  beside ours, and the tasks (``benchmark.tasks``, default every evaluated eval set).

An eval set marked ``optional: true`` whose files are not all there leaves the config (and so the
DAG) with one warning line naming it and its key: a user with only the public data still gets a
leaderboard of the public tasks. This is done for every config, not only the benchmark's. A
model from a paper config's results folder that holds no such run leaves the same way. A dry run
with ``placeholders_ok`` keeps both (the whole grid).

A model added to ``models`` adds only its own jobs; a task added adds only that task's embed and
evaluate jobs (each job's params hold only what changes its output; tests/report/test_benchmark.py).
"""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Callable, Mapping
from typing import Any

from clinsent.benchmark.models import METHOD_PREFIX, model_runs, run_folder, same_models
from clinsent.config.declare import build
from clinsent.config.sections import EvalSetConfig, Evaluation, ModelEntry, placeholders
from clinsent.errors import InputError, shown
from clinsent.paths import DOC_TASK, Tree

DEFAULT_TITLE = "Clinical sentence-embedding benchmark: every clinical task of the five papers"


def _stderr(line: str) -> None:
    print(line, file=sys.stderr)


def leave_out_missing(config: dict[str, Any], warn: Callable[[str], Any] = _stderr) -> list[str]:
    """Drop each eval set marked ``optional`` whose files are not all there; one warning line (names
    and keys only). Returns the names left out."""
    from clinsent.tasks.config import resolve_eval_set

    check_tasks(config)  # before optional sets leave: a task of config/benchmark.yaml is known without its data
    gone: list[str] = []
    if placeholders(config.get("placeholders_ok")):  # a dry run of the whole grid before the data is there
        return gone
    evaluation = config.get("evaluation") or {}
    for name, entry in list((config.get("eval_sets") or {}).items()):
        if not (isinstance(entry, Mapping) and entry.get("optional")):
            continue
        shell = build(EvalSetConfig, {k: v for k, v in entry.items() if k != "optional"})
        files = resolve_eval_set(name, shell, build(Evaluation, evaluation)).task.files()
        if any(not os.path.exists(f) for f in _user_files(config, name, files)):
            gone.append(name)
            del config["eval_sets"][name]
    kept = set(doc_task_sets(config).values())
    for task in list(config.get("doc_tasks") or {}):  # a document task whose eval sets all left
        if task not in kept:
            del config["doc_tasks"][task]
    if gone and not config.get("doc_tasks") and any(not os.path.exists(p) for p in _notes(config)):
        config.pop("notes", None)  # the notes fed only the document tasks that left
        config.pop("documents", None)
        config.pop("doc_tasks", None)
    for name, entry in list((config.get("finetune") or {}).items()):  # a fine-tune entry on a set left out
        if isinstance(entry, Mapping) and any(entry.get(role) in gone for role in ("train", "validation", "test")):
            gone.append(name)
            del config["finetune"][name]
    if gone:
        warn(
            f"clinsent: left out {len(gone)} optional eval set(s) whose files are missing: {', '.join(gone)} "
            f"(point eval_sets.<name>.path at your copies to score them)"
        )
    unrun = []  # a benchmark model trained by a paper config that has not been run (its results folder lacks it)
    for name, entry in list((config.get("models") or {}).items()):
        if isinstance(entry, Mapping) and entry.get("run") and entry.get("results"):
            folder = run_folder(
                str(entry["results"]), str(entry["run"]), int(entry.get("seed", 0)), f"config: models.{name}"
            )
            if not os.path.isdir(folder):
                unrun.append(name)
                del config["models"][name]
    if unrun:
        warn(
            f"clinsent: left out {len(unrun)} model(s) whose paper config has not been run: {', '.join(unrun)} "
            f"(run that config first, or correct models.<name>.results)"
        )
    return gone


def check_tasks(config: Mapping[str, Any]) -> None:
    """Every name of ``benchmark.tasks`` is an eval set or a fine-tune entry of the config."""
    from clinsent.registry import did_you_mean

    tasks = (config.get("benchmark") or {}).get("tasks")
    if not isinstance(tasks, list):
        return
    known = [*(config.get("eval_sets") or {}), *(config.get("finetune") or {})]
    for i, task in enumerate(tasks):
        if task not in known:
            raise InputError(
                f"config: benchmark.tasks[{i}]",
                f"{shown(task)} is neither an eval set nor a fine-tune entry{did_you_mean(str(task), known)}",
                "name one of eval_sets or finetune, or remove it",
            )


def doc_task_sets(config: Mapping[str, Any]) -> dict[str, str]:
    """Eval set -> the document task whose table (``<results>/doc_tasks/<task>.parquet``, built
    from the notes) is its file."""
    results = str(config.get("results") or "results")
    tables = {Tree(results).file(DOC_TASK, task=task): task for task in config.get("doc_tasks") or {}}
    return {
        name: tables[str(e.get("path"))]
        for name, e in (config.get("eval_sets") or {}).items()
        if isinstance(e, Mapping) and str(e.get("path")) in tables
    }


def _notes(config: Mapping[str, Any]) -> list[str]:
    notes = (config.get("notes") or {}).get("path")
    return [notes] if isinstance(notes, str) else [str(p) for p in notes or []]


def _user_files(config: Mapping[str, Any], name: str, files: list[str]) -> list[str]:
    """The user's files behind eval set ``name``'s: a document task's table stands for the notes
    and that task's own files (diagnoses, mapping)."""
    task = doc_task_sets(config).get(name)
    if task is None:
        return [str(f) for f in files]
    entry = (config.get("doc_tasks") or {})[task]
    return [*_notes(config), *(str(entry[k]) for k in ("diagnoses", "mapping") if entry.get(k))]


def declared_models(config: Mapping[str, Any]) -> dict[str, ModelEntry | str]:
    """The ``models`` section typed by its declaration (:class:`ModelEntry`), read at the door
    before the schema has checked it (the expansion runs first; the schema then checks its keys)."""
    models = config.get("models") or {}
    if not isinstance(models, Mapping):
        raise InputError("config: models", "is not a mapping of name -> model", "see config/benchmark.yaml")
    return {
        name: spec if isinstance(spec, str) else build(ModelEntry, spec if isinstance(spec, Mapping) else {})
        for name, spec in models.items()
    }


def _model_entries(config: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The tables and figures whose kind cites models on tasks (its keys include ``models`` and
    ``eval_sets``: the leaderboard and the heatmap among the built-ins), as the config declares them."""
    from clinsent.report.kinds.base import figure_kind, table_kind

    wanted = {"models", "eval_sets"}
    found = []  # the config's own entries: the door fills them in
    for section, kind_of in (("tables", table_kind), ("figures", figure_kind)):
        for key, entry in (config.get(section) or {}).items():
            if wanted <= {f.name for f in dataclasses.fields(kind_of(key, entry).settings_class)}:
                found.append(entry)
    return found


def expand(config: dict[str, Any]) -> dict[str, Any]:
    """``config`` with its ``models`` read into base models, methods, the leaderboard and the
    heatmap, in place (idempotent: a job re-reading the config gets the same grid)."""
    runs = model_runs(declared_models(config))
    if not runs:
        return config
    for first, again in same_models(runs):
        _stderr(
            f"clinsent: models {first} and {again} are the same model with the same pooling: both are scored "
            "(twice the jobs for one result); remove one, or give one another pooling"
        )
    bench = dict(config.get("benchmark") or {})
    base_models = config.setdefault("base_models", {})
    methods = config.setdefault("methods", {})
    for name, model in runs.items():
        if "path" not in model:
            continue
        if name in base_models and base_models[name] != model["path"]:
            raise InputError(
                f"config: models.{name}",
                f"is also a base model ({base_models[name]})",
                "rename the model or the base model",
            )
        base_models[name] = model["path"]
        methods.setdefault(
            f"{METHOD_PREFIX}{model['pooling']}", {"objective": "none", "pooling": model["pooling"], "seeds": [0]}
        )
    rows = [m["row"] for m in runs.values()]
    tasks = list(
        bench.get("tasks")
        or [n for n, e in (config.get("eval_sets") or {}).items() if (e or {}).get("evaluate", True)]
    )
    tasks = [t for t in tasks if t in (config.get("eval_sets") or {}) or t in (config.get("finetune") or {})]
    config.setdefault("selection_set", None)
    config.setdefault("seeds", [0])
    report = config.setdefault("report", {})
    report.setdefault("title", DEFAULT_TITLE)
    report.setdefault("base_model", next(iter(base_models), None))
    report.setdefault("paper_label", "published")
    for entry in _model_entries(config):  # what a table or figure citing the models leaves out
        entry.setdefault("eval_sets", tasks)
        entry.setdefault("models", rows)
    return config
