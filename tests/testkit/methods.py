"""A method entry resolved from plain mappings, as a test writes it: the entry and the shared
``training`` values built into their typed shells first (what the door does for a config)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from clinsent.config.declare import build
from clinsent.config.sections import MethodConfig, RunConfig, Training
from clinsent.methods import config
from clinsent.methods.entries import MethodEntry


def resolve_method(
    name: str,
    entry: Mapping[str, Any],
    training: Mapping[str, Any],
    seeds: list[int],
    run: RunConfig | None = None,
) -> MethodEntry:
    return config.resolve_method(name, build(MethodConfig, entry), build(Training, training), seeds, run)
