"""The one config loader: a config as the Snakefile reads it (its base underneath, optional sets
whose files are missing left out, the benchmark's models expanded), validated against the
schema with the defaults filled in. The Snakefile and ``python -m clinsent.plan`` both call it.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from clinsent.repository import SCHEMA


def load_config(path: str, overrides: Mapping[str, Any]) -> dict[str, Any]:
    """A config file as the Snakefile sees it: validated against the schema, defaults filled in."""
    from clinsent.safe_yaml import load_mapping

    return prepare_config({**load_mapping(path), **overrides})


def prepare_config(config: dict[str, Any], root: Path | None = None) -> dict[str, Any]:
    """A config as the Snakefile reads it (its base underneath, optional sets whose files are
    missing left out, the benchmark's models expanded), validated against the schema with the
    defaults filled in; a schema error is a ``ValueError`` of one line (the key, the fix)."""
    from snakemake.exceptions import WorkflowError
    from snakemake.utils import validate

    from clinsent.benchmark.models import expand as expand_models
    from clinsent.benchmark.models import leave_out_missing
    from clinsent.overlay import fill_results, resolve_base
    from clinsent.smk import schema_message

    fill_results(resolve_base(config, root=root))
    leave_out_missing(config)
    expand_models(config)
    from clinsent.gpu_pool import normalise_gpus
    from clinsent.settings import floats_for_integers

    normalise_gpus(config)  # --config 'gpus=[2,3]' arrives as strings
    schema_file = SCHEMA
    try:
        validate(config, str(schema_file))
    except WorkflowError as exc:
        raise ValueError(schema_message(exc)) from None
    floats_for_integers(config, _schema(schema_file))
    from clinsent.safety.places import check_write_root

    # the folders the workflow writes under: never empty, the root, a home folder or a system
    # folder, whether the value came from a config file or --config (clinsent.safety.places)
    check_write_root(config.get("results"), "config: results")
    check_write_root(config.get("hub_dir"), "config: hub_dir")
    return config


@functools.cache
def _schema(path: Path) -> dict[str, Any]:
    """The config schema, read once per process (every plan of a test session reads it)."""
    from clinsent.safe_yaml import load_mapping

    return load_mapping(path)


def schema_defaults(section: str) -> dict[str, Any]:
    """The defaults the schema gives the keys of one section (a key without one: absent)."""
    properties = _schema(SCHEMA)["properties"]
    return {k: v["default"] for k, v in properties[section].get("properties", {}).items() if "default" in v}
