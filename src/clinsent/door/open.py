"""The one door: a config file or mapping in, the run's :class:`~clinsent.plan.layout.Plan` out.

:func:`open_plan` is how every entrance opens a run: the Snakefile (on Snakemake's ``config``),
the plan command (``python -m clinsent plan``), ``new-config`` (the paper it writes on top of,
and the config it wrote) and the benchmark's tools. It composes the door's steps, and nothing
else does:

1. the config read through the safe YAML loader (a file; or the files Snakemake already read
   into its ``config``, read again so that a repeated key is refused, not silently taken last);
2. the overrides on top (``--config``'s, a test's);
3. the door's passes (:mod:`clinsent.door.validate`: the base underneath, missing optional sets
   left out, the benchmark's models expanded, finite numbers, the schema and its defaults);
4. the typed config and the plan (:func:`clinsent.plan.checks.build_plan`: the registries, every
   cross-key check, and with ``read_inputs`` every input's first block).

:func:`open_config` stops after step 3, for the callers that want the completed mapping only
(``new-config`` writes one; the tests read one).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, MutableMapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from clinsent.door.validate import prepare
from clinsent.io.safe_yaml import load_mapping

if TYPE_CHECKING:
    from clinsent.plan.layout import Plan

Source = str | Path | MutableMapping[str, Any]


def open_config(
    source: Source, overrides: Mapping[str, Any] | None = None, *, files: Iterable[str | Path] = ()
) -> dict[str, Any]:
    """Steps 1-3 of the door (see the module): a config file's mapping, or ``source`` itself when
    it is a mapping (completed in place: Snakemake's ``config``), with ``overrides`` on top.
    ``files``: the config files a mapping came from, read again for their repeated keys."""
    for given in files:
        load_mapping(given)  # refused: a repeated key (YAML's own reading keeps the last)
    config = load_mapping(source) if isinstance(source, (str, Path)) else source
    if overrides:
        config.update(overrides)
    return prepare(config)  # type: ignore[arg-type]


def open_plan(
    source: Source,
    overrides: Mapping[str, Any] | None = None,
    *,
    files: Iterable[str | Path] = (),
    read_inputs: bool = True,
) -> Plan:
    """The run's plan from a config file or mapping (the door, every step: see the module).
    ``read_inputs``: read every input's first block and the eval sets in full (a run's main
    process and a dry run do; a job's re-parse of the Snakefile does not)."""
    from clinsent.plan.checks import build_plan

    return build_plan(open_config(source, overrides, files=files), read_inputs=read_inputs)
