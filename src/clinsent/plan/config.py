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
    from clinsent.io.safe_yaml import load_mapping

    return prepare_config({**load_mapping(path), **overrides})


def prepare_config(config: dict[str, Any], root: Path | None = None) -> dict[str, Any]:
    """A config as the Snakefile reads it (its base underneath, optional sets whose files are
    missing left out, the benchmark's models expanded), validated against the schema with the
    defaults filled in; a schema error is a ``ValueError`` of one line (the key, the fix)."""
    from snakemake.exceptions import WorkflowError
    from snakemake.utils import validate

    from clinsent.config.expansion import expand as expand_models
    from clinsent.config.expansion import leave_out_missing
    from clinsent.config.overlay import fill_results, resolve_base
    from clinsent.workflow.smk import schema_message

    fill_results(resolve_base(config, root=root))
    leave_out_missing(config)
    expand_models(config)
    from clinsent.config.settings import check_finite, floats_for_integers

    _gpus_as_integers(config)  # --config 'gpus=[2,3]' arrives as strings
    check_finite(config)  # NaN and infinity pass the schema's bounds: refused here, for every key
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


def _gpus_as_integers(config: dict[str, Any]) -> None:
    """``gpus`` as the schema reads it: Snakemake's ``--config 'gpus=[2,3]'`` (the documented
    override) parses the list's items as strings, which become integers here; anything else is
    left for the schema and :func:`clinsent.gpu.pool.resolve_pool` to judge."""
    gpus = config.get("gpus")
    if isinstance(gpus, list):
        config["gpus"] = [int(g) if isinstance(g, str) and g.strip().isdigit() else g for g in gpus]


@functools.cache
def _schema(path: Path) -> dict[str, Any]:
    """The config schema, read once per process (every plan of a test session reads it)."""
    from clinsent.io.safe_yaml import load_mapping

    return load_mapping(path)
