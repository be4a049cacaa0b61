"""The benchmark's models (``models:``): each model's leaderboard row and base model
(:func:`model_runs`), the saved model of a paper config's run (:func:`run_folder`) and models
that score the same thing twice (:func:`same_models`). The door reads them into the grid
(:mod:`clinsent.door.expansion`)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from clinsent.config.sections import ModelEntry
from clinsent.errors import InputError
from clinsent.paths import MODEL, Tree
from clinsent.run_ref import split_run

METHOD_PREFIX = "as_is_"


def run_folder(results: str, run: str, seed: int, where: str) -> str:
    """The saved model of ``method@base_model`` (seed ``seed``) in a paper config's results folder."""
    method, base = split_run(run, "")
    if not (method and base):
        raise InputError(where, f"run {run!r} is not method@base_model", "write e.g. medse_replace@biobert")
    return Tree(results).file(MODEL, method=method, base_model=base, seed=seed)


def same_models(runs: Mapping[str, Mapping[str, Any]]) -> list[tuple[str, str]]:
    """Pairs of model keys that score one model (the same folder or id, the same pooling)."""
    from clinsent.models.base import resolve_model

    seen: dict[tuple[str, str], str] = {}
    pairs = []
    for name, model in runs.items():
        if "path" not in model:
            continue
        try:
            folder = resolve_model(str(model["path"]))
        except InputError:  # a folder not there yet (a placeholder): its spelling is all there is to compare
            folder = str(model["path"])
        key = (os.path.realpath(folder) if os.path.exists(folder) else folder, str(model["pooling"]))
        if key in seen:
            pairs.append((seen[key], name))
        else:
            seen[key] = name
    return pairs


def model_runs(models: Mapping[str, ModelEntry | str]) -> dict[str, dict[str, Any]]:
    """Model key -> its leaderboard row (label, run, paper) and, for a model scored as it is, its
    base model path and pooling (``path``, ``pooling``; none for a run of this config)."""
    out: dict[str, dict[str, Any]] = {}
    for name, spec in models.items():
        where = f"config: models.{name}"
        entry = ModelEntry(model=spec) if isinstance(spec, str) else spec
        if bool(entry.model) == bool(entry.run):
            raise InputError(
                where,
                "needs exactly one of model (an id or a folder) and run (method@base_model)",
                "give model: <id or folder>, or run: <method@base_model> with results: <folder>",
            )
        row: dict[str, Any] = {"label": str(entry.label or name)}
        if entry.paper:
            row["paper"] = dict(entry.paper)
        if entry.run and not entry.results:  # a run of this config's own methods: cited as it is
            out[name] = {"row": {**row, "run": entry.run}}
            continue
        path = run_folder(entry.results or "", entry.run, entry.seed, where) if entry.run else str(entry.model)
        pooling = entry.pooling or "model"
        out[name] = {"row": {**row, "run": f"{METHOD_PREFIX}{pooling}@{name}"}, "path": path, "pooling": pooling}
    return out
