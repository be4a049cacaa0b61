"""A config read on top of another: ``base: config/paper/medse.yaml`` in a config makes that file
the starting point, and the config states only what differs (a user's own files and results
folder, written by ``python -m clinsent new-config``). Mappings merge key by key, recursively;
any other value (a list, a string, a number, null) replaces the base's. A base may itself have
a base; a cycle is an error. Relative ``base`` paths are from the workflow's directory, like
every other path of a config."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from clinsent.errors import InputError


def merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """``over`` on top of ``base``: mappings merged recursively, anything else replaced."""
    out = copy.deepcopy(dict(base))
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def resolve_base(config: dict[str, Any], seen: tuple[str, ...] = ()) -> dict[str, Any]:
    """``config`` with its ``base`` chain read underneath, in place (Snakemake's ``config`` is
    one dict that every rule and job sees); a config without ``base`` is returned unchanged."""
    import yaml

    name = config.get("base")
    if not name:
        return config
    path = Path(str(name))
    if str(path) in seen:
        raise InputError("config: base", f"{path} is its own base (through {' -> '.join(seen)})", "break the cycle")
    if not path.is_file():
        raise InputError("config: base", f"{path} does not exist (from {Path.cwd()})",
                         "name a config file, e.g. config/paper/medse.yaml (paths are from the workflow's directory)")
    under = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    if not isinstance(under, dict):
        raise InputError(path, "is not a mapping of config keys", "point `base` at a config file")
    under = resolve_base(under, (*seen, str(path)))
    merged = merge(under, {k: v for k, v in config.items() if k != "base"})
    config.clear()
    config.update(merged)
    return config
