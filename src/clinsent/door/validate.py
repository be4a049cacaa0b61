"""The door's last pass: a config mapping completed and validated (its base underneath, optional
sets whose files are missing left out, the benchmark's models expanded, every number finite,
checked against the schema with its defaults filled in, the folders it writes under checked).
Called by :func:`clinsent.door.open.open_config` alone."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from clinsent.config.declare import check_finite, floats_for_integers
from clinsent.door.expansion import expand as expand_models
from clinsent.door.expansion import leave_out_missing
from clinsent.door.overlay import fill_results, resolve_base
from clinsent.repository import SCHEMA
from clinsent.safety.places import check_write_root


def prepare(config: dict[str, Any], root: Path | None = None) -> dict[str, Any]:
    """``config`` completed in place and returned (see the module); a schema error is a
    ``ValueError`` of one line (the key, the fix). Preparing a prepared config changes nothing."""
    from snakemake.exceptions import WorkflowError
    from snakemake.utils import validate

    fill_results(resolve_base(config, root=root))
    leave_out_missing(config)
    expand_models(config)
    _gpus_as_integers(config)  # --config 'gpus=[2,3]' arrives as strings
    check_finite(config)  # NaN and infinity pass the schema's bounds: refused here, for every key
    try:
        validate(config, str(SCHEMA))
    except WorkflowError as exc:
        raise ValueError(schema_message(exc)) from None
    floats_for_integers(config, _schema(SCHEMA))
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


def schema_message(exc: BaseException) -> str:
    """One line for a failed ``validate(config, schema)``: the config key, what is wrong, the
    closest allowed key for an unknown one, and where the keys are described."""
    from clinsent.registry import did_you_mean

    linked = [*getattr(exc, "args", ()), exc.__cause__, exc.__context__]  # Snakemake raises inside `except`
    error = next((a for a in linked if hasattr(a, "absolute_path") and hasattr(a, "message")), None)
    if error is None:
        return str(exc).splitlines()[0]
    from clinsent.errors import KEY, shown, shown_value, unknown_key

    where = ".".join(str(p) if KEY.match(str(p)) else f"<{shown(p)}>" for p in error.absolute_path)
    instance = error.instance  # jsonschema's message quotes it: only a number or a plain name is shown
    plain = not isinstance(instance, (str, dict, list)) or (
        isinstance(instance, str) and shown_value(instance) == repr(instance)
    )
    problem = (
        error.message
        if plain or error.validator == "required"
        else f"{shown_value(instance)} is not valid here ({error.validator}: {error.validator_value!r})"
    )
    if error.validator == "uniqueItems" and isinstance(instance, list):
        twice = next((i for i, v in enumerate(instance) if v in instance[:i]), None)
        if twice is not None:
            return (
                f"config: {where}[{twice}]: {shown_value(instance[twice])} is listed twice (it would act twice, "
                "e.g. a tracker writing every scalar twice). Fix: list each once"
            )
    if error.validator == "additionalProperties":
        allowed = sorted(error.schema.get("properties") or {})
        unknown = [k for k in error.instance if k not in allowed] if isinstance(error.instance, dict) else []
        if unknown:
            problem = (
                f"{unknown_key(unknown[0])}{did_you_mean(str(unknown[0]), allowed)}; allowed: {', '.join(allowed)}"
            )
    return f"config: {where or '(top level)'}: {problem}. Fix: see config/README.md for every key and its values"
