"""Name -> class registries (methods, evaluation tasks, training-data readers) and plugins.

The trainer, the rules and the scripts never test a method's or a task's name: they look the
class up here. Built-in entries register themselves when their package is imported; a user's
own module joins through the config's ``plugins`` list (a Python file or an importable module
name), which the workflow and every script import before they read the config.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.util
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Generic, TypeVar

from clinsent.errors import InputError

T = TypeVar("T")


def closest(word: str, choices: Iterable[str]) -> str | None:
    """The closest of ``choices`` to ``word`` (difflib ratio >= 0.6), or None."""
    found = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return found[0] if found else None


def check_values(wanted: Iterable[str], seen: dict[str, int], key: str, source: str | Path, what: str) -> None:
    """Every value of the config list ``key`` (e.g. ``notes.categories``) is one of the values
    ``seen`` in the data (value -> count): else stop at the first that is not, naming its index,
    with the closest seen value and its count, written with ``repr`` so that a trailing space
    shows ('Physician ' for MIMIC-III's physician notes)."""
    for i, value in enumerate(wanted):
        if value in seen:
            continue
        spaced = [v for v in seen if v.strip() == value.strip()]
        match = spaced[0] if spaced else closest(value, seen)
        hint = (
            f"; the closest is {match!r} ({seen[match]} row{'' if seen[match] == 1 else 's'}"
            f"{', it differs only in spaces' if spaced else ''})"
            if match is not None
            else ""
        )
        raise InputError(
            f"config: {key}[{i}]",
            f"{value!r} matches no {what} of {source} ({len(seen)} values seen{hint})",
            "write the value exactly as in the data (spaces included), or remove it: a class that "
            "matches nothing would silently be left out",
        )


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    match = closest(word, choices)
    return f" (closest: {match!r})" if match else ""


class Registry(Generic[T]):
    """A named collection of classes; ``register`` is used as a class decorator."""

    def __init__(self, what: str, config_key: str) -> None:
        self.what, self.config_key = what, config_key
        self._entries: dict[str, T] = {}

    def register(self, name: str) -> Callable[[T], T]:
        def add(cls: T) -> T:
            self._entries[name] = cls
            return cls

        return add

    def names(self) -> list[str]:
        return sorted(self._entries)

    def get(self, name: str, where: str | None = None) -> T:
        if name not in self._entries:
            from clinsent.safe_yaml import shown

            raise InputError(
                where or f"config: {self.config_key}",
                f"unknown {self.what} {shown(name)}{did_you_mean(name, self._entries)}",
                f"use one of {', '.join(self.names())}, or add a module that registers it (see docs/extending.md)",
            )
        return self._entries[name]


def load_plugins(plugins: Iterable[str] | None) -> None:
    """Import each plugin once: a path to a ``.py`` file, or an importable module name."""
    for spec in plugins or []:
        if spec.endswith(".py"):
            path = Path(spec).resolve()
            name = f"clinsent_plugin_{path.stem}_{abs(hash(str(path)))}"
            if name in sys.modules:
                continue
            if not path.exists():
                raise InputError("config: plugins", f"plugin file {spec} does not exist", "fix the path")
            module_spec = importlib.util.spec_from_file_location(name, path)
            assert module_spec is not None and module_spec.loader is not None
            module = importlib.util.module_from_spec(module_spec)
            sys.modules[name] = module
            module_spec.loader.exec_module(module)
        else:
            importlib.import_module(spec)
