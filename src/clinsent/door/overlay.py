"""A config read on top of another: ``base: config/paper/medse.yaml`` in a config makes that file
the starting point, and the config states only what differs (a user's own files and results
folder, written by ``python -m clinsent new-config``; a paper's demo twin). Mappings merge key by
key, recursively; any other value (a list, a string, a number, null) replaces the base's. A base
may itself have a base; a cycle is an error. Relative ``base`` paths are from the workflow's
directory, like every other path of a config.

Merging can add and change but not remove, so an overlay may also say which of the base's
entries it keeps: ``keep: {methods: [lm, medse_replace], base_models: [biobert]}`` leaves the
base's other methods and base models out, and with them every table cell and figure item that
cites one (a cell becomes empty; an item, or a row whose cells are all empty, leaves; a table or
figure left with an empty list of rows or items leaves; so does a corpus embedding of a run left out).
``keep: {eval_sets: []}`` drops all of
the base's eval sets, so the overlay states its own whole; ``drop: {methods: [a, b]}`` is the
complement (every entry but these). Both are applied to the base before the overlay is merged on
top, and name entries of top-level mappings (methods, base_models, eval_sets, tables, figures,
finetune, ...); a name the base lacks is an error.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from clinsent.config.names import is_name
from clinsent.errors import InputError, shown
from clinsent.paths import DOC_TASK, RESULTS, fill
from clinsent.registry import did_you_mean
from clinsent.run_ref import split_run

# top-level sections whose entries cite runs
_CITING = ("tables", "figures")
_EMPTIED = object()  # what _prune returns for a node whose list of rows or items became empty


def merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """``over`` on top of ``base``: mappings merged recursively, anything else replaced."""
    out = copy.deepcopy(dict(base))
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def keep_only(
    base: dict[str, Any],
    keep: Mapping[str, Any],
    where: str,
    default_base: str | None = None,
    drop: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """``base`` with only the entries ``keep`` names (and without those ``drop`` names) in each
    section they name, and the table cells and figure items that cite a method or base model
    left out pruned (see the module). ``default_base`` is the overlay's ``report.base_model`` (a
    cell without ``@`` runs on it)."""
    out = copy.deepcopy(base)
    specs = {"keep": keep, "drop": drop or {}}
    for word, spec in specs.items():  # both against the base itself, keep first, before either applies
        _check_names(word, spec, base, where)
    for section in set(specs["keep"]) & set(specs["drop"]):
        both = [n for n in specs["keep"][section] if n in specs["drop"][section]]
        if both:
            raise InputError(
                f"config: keep.{section} and drop.{section}",
                f"both name {shown(both[0])}",
                "name it in one of them (keep: only these entries; drop: every entry but these)",
            )
    for word, spec in specs.items():
        for section, names in spec.items():
            out[section] = {k: v for k, v in out[section].items() if (k in names) == (word == "keep")}
    uses = (out.get("model_card") or {}).get("data_use")
    if isinstance(uses, dict):  # the data-use entry of a training source left out leaves with it
        gone_sources = {k for section in ("training_data", "sentence_corpora") for k in base.get(section) or {}} - {
            k for section in ("training_data", "sentence_corpora") for k in out.get(section) or {}
        }
        out["model_card"]["data_use"] = {k: v for k, v in uses.items() if k not in gone_sources}
    gone_methods = set(base.get("methods") or {}) - set(out.get("methods") or {})
    gone_bases = set(base.get("base_models") or {}) - set(out.get("base_models") or {})
    if not (gone_methods or gone_bases):
        return out
    bases = list(base.get("base_models") or {})
    default = default_base or (base.get("report") or {}).get("base_model") or (bases[0] if bases else "")

    def gone(ref: Any) -> bool:
        if not isinstance(ref, str):
            return False
        method, on = split_run(ref, default)
        return method in gone_methods or on in gone_bases

    for section in _CITING:
        entries = out.get(section)
        if isinstance(entries, Mapping):
            out[section] = {k: e for k, e in ((k, _prune(e, gone)) for k, e in entries.items()) if e is not _EMPTIED}
    for entry in (out.get("finetune") or {}).values():  # a fine-tune entry's `methods` names methods
        if isinstance(entry, dict) and isinstance(entry.get("methods"), list):
            entry["methods"] = [m for m in entry["methods"] if m not in gone_methods]
    if isinstance(out.get("corpus_embeddings"), Mapping):  # a corpus embedding of a run left out leaves too
        out["corpus_embeddings"] = {
            k: e for k, e in out["corpus_embeddings"].items() if not (isinstance(e, Mapping) and gone(e.get("run")))
        }
    return out


def _check_names(word: str, spec: Any, base: Mapping[str, Any], where: str) -> None:
    """``keep`` or ``drop``: a mapping of sections of the base (``where``) to lists of names it has."""
    if not isinstance(spec, Mapping):
        raise InputError(
            f"config: {word} ({where})", "is not a mapping of section -> names", f"write {word}: {{methods: [a, b]}}"
        )
    for section, names in spec.items():
        have = base.get(section)
        if not isinstance(have, Mapping):
            label = section if is_name(str(section)) else f"({shown(section)})"
            raise InputError(
                f"config: {word}.{label}",
                f"the base has no mapping {shown(section)} to {word} entries of",
                "name a top-level section of the base that is a mapping (methods, base_models, eval_sets, ...)",
            )
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise InputError(
                f"config: {word}.{section}", "is not a list of names", "write a list, e.g. [a, b] (or [] for none)"
            )
        for name in names:
            if name not in have:
                raise InputError(
                    f"config: {word}.{section}",
                    f"names {shown(name)}, which is not a key of the base's {section}{did_you_mean(name, list(have))}",
                    "name an entry of the base config or correct the name",
                )


def _prune(node: Any, gone: Any) -> Any:
    """``node`` without what ``gone`` says is gone; _EMPTIED when a list of rows or items it had became empty."""
    if isinstance(node, dict):
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key == "cells" and isinstance(value, list):
                value = [None if gone(c) else c for c in value]
            elif key == "runs" and isinstance(value, list):
                value = [r for r in value if not gone(r)]
                if not value:
                    return _EMPTIED
            elif isinstance(value, (dict, list)):
                value = _prune(value, gone)
                if value is _EMPTIED:
                    return _EMPTIED
            out[key] = value
        return out
    if isinstance(node, list):
        items = []
        for item in node:
            if isinstance(item, dict) and gone(item.get("run")):
                continue
            if (
                isinstance(item, dict)
                and isinstance(item.get("cells"), list)
                and any(item["cells"])
                and not any(c for c in item["cells"] if not gone(c))
            ):
                continue
            pruned = _prune(item, gone)
            if pruned is _EMPTIED:
                return _EMPTIED
            items.append(pruned)
        return items if items or not node else _EMPTIED
    return node


def resolve_base(config: dict[str, Any], seen: tuple[str, ...] = (), root: Path | None = None) -> dict[str, Any]:
    """``config`` with its ``base`` chain read underneath (and its ``keep`` and ``drop`` applied
    to it), in place (Snakemake's ``config`` is one dict that every rule and job sees); a config
    without ``base`` is returned unchanged. A relative ``base`` is from ``root`` (default: the
    working directory, the workflow's)."""
    from clinsent.io.safe_yaml import load_mapping

    name = config.get("base")
    if not name:
        for word in ("keep", "drop"):
            if config.get(word):
                raise InputError(
                    f"config: {word}",
                    f"has no base config to {word} entries of",
                    f"add base: <a config file> or remove {word}",
                )
            config.pop(word, None)
        return config
    path = Path(str(name)) if root is None else root / str(name)
    if str(path) in seen:
        raise InputError("config: base", f"{path} is its own base (through {' -> '.join(seen)})", "break the cycle")
    if not path.is_file():
        raise InputError(
            "config: base",
            f"{path} does not exist (from {Path.cwd()})",
            "name a config file, e.g. config/paper/medse.yaml (paths are from the workflow's directory)",
        )
    under = load_mapping(path, "base")  # never quoted back: a file given by mistake may be a note
    under = resolve_base(under, (*seen, str(path)), root)
    under = keep_only(
        under,
        config.get("keep") or {},
        str(path),
        (config.get("report") or {}).get("base_model"),
        config.get("drop") or {},
    )
    merged = merge(under, {k: v for k, v in config.items() if k not in ("base", "keep", "drop")})
    config.clear()
    config.update(merged)
    return config


def fill_results(config: dict[str, Any]) -> dict[str, Any]:
    """Eval-set paths that start ``{results}/`` (a document task's table, built from the notes)
    point into this run's own results folder, whatever folder the config (or an overlay on top
    of it) names, in place. A path into ``doc_tasks/<task>.parquet`` of another folder, for a
    task this config builds, would read another run's table: an error. Run once the whole
    config is read (its base underneath), by the Snakefile and :func:`clinsent.door.validate.prepare_config`."""
    import re

    results = str(config.get("results") or "results")
    tasks = set(config.get("doc_tasks") or {})
    for name, entry in (config.get("eval_sets") or {}).items():
        path = entry.get("path") if isinstance(entry, dict) else None
        if not isinstance(path, str):
            continue
        if path.startswith(f"{RESULTS}/"):
            entry["path"] = results + path[len(RESULTS) :]
            continue
        built = re.fullmatch(r"(.+)/" + re.escape(DOC_TASK.split("{")[0]) + r"([A-Za-z0-9_.-]+)\.parquet", path)
        if built and built.group(2) in tasks and built.group(1) != results:
            raise InputError(
                f"config: eval_sets.{name}.path",
                f"reads {fill(DOC_TASK, task=built.group(2))} of the results "
                f"folder {built.group(1)}, not this run's ({results}): a document task's table is built "
                "from this run's notes",
                f"write {RESULTS}/{fill(DOC_TASK, task=built.group(2))}",
            )
    return config
