"""Name -> class registries (methods, evaluation tasks, kinds, readers) and plugins.

The trainer, the rules and the scripts never test a method's or a task's name: they look the
class up here. Built-in entries register themselves when their package is imported; a user's
own module joins through the config's ``plugins`` list (a Python file or an importable module
name), which the workflow and every script import before they read the config.

One contract for every registry: ``@REGISTRY.register("name", settings=SettingsClass)`` on the
class. The name is written once (the registry sets the class's ``name``) and so is the settings
class (its ``settings_class``); a registry of classes with settings (methods, tasks, kinds)
refuses a class registered without one. A name registered twice is refused when the second
module is imported, naming both classes and their files.

The built-ins of a registry with a ``package`` are loaded when asked for: each lives in the
package's module of its own name (``clinsent.tasks.sts`` registers ``sts``), so looking one
up imports that module alone; listing the names (:meth:`Registry.names`) imports them all.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.util
import inspect
import pkgutil
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Generic, TypeVar

from clinsent.errors import InputError, shown

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


class RegistryError(TypeError):
    """A name registered twice, or a class whose own ``name`` says another."""


def _place(entry: Any) -> str:
    """Where a registered entry was defined: module.qualname (file:line)."""
    label = f"{getattr(entry, '__module__', '?')}.{getattr(entry, '__qualname__', repr(entry))}"
    try:
        return f"{label} ({inspect.getsourcefile(entry)}:{inspect.getsourcelines(entry)[1]})"
    except (TypeError, OSError):
        return label


class Registry(Generic[T]):
    """A named collection of classes (or readers); ``register`` is used as a class decorator.
    ``settings``: whether its classes take a settings class (then ``register`` asks for it);
    ``package``: where the built-ins live, one module each, named as the entry (loaded lazily)."""

    def __init__(self, what: str, config_key: str, settings: bool = False, package: str | None = None) -> None:
        self.what, self.config_key, self.takes_settings, self.package = what, config_key, settings, package
        self._entries: dict[str, T] = {}
        self._all_loaded = package is None

    def register(self, name: str, settings: type | None = None) -> Callable[[T], T]:
        """``@REGISTRY.register("name", settings=SettingsClass)``: see the module."""

        def add(entry: T) -> T:
            old = self._entries.get(name)
            if old is not None and old is not entry:
                raise RegistryError(
                    f"{self.what} {name!r} is registered twice: by {_place(old)} and by {_place(entry)}; "
                    "rename one of them"
                )
            if isinstance(entry, type):
                self._name_class(name, entry, settings)
            self._entries[name] = entry
            return entry

        return add

    def _name_class(self, name: str, cls: type, settings: type | None) -> None:
        own = vars(cls)
        if own.get("name") not in (None, "", name):
            raise RegistryError(f"{_place(cls)} says name = {own['name']!r} but is registered as {name!r}")
        if settings is None and self.takes_settings:
            raise RegistryError(
                f"{_place(cls)}: register({name!r}) without settings=; write "
                f"@...register({name!r}, settings=<its settings dataclass>)"
            )
        cls.name = name  # type: ignore[attr-defined]
        if settings is not None:
            cls.settings_class = settings  # type: ignore[attr-defined]

    def names(self) -> list[str]:
        self._load_all()
        return sorted(self._entries)

    def get(self, name: str, where: str | None = None) -> T:
        if name not in self._entries:
            self._load(name)
        if name not in self._entries:
            raise InputError(
                where or f"config: {self.config_key}",
                f"unknown {self.what} {shown(name)}{did_you_mean(name, self._entries)}",
                f"use one of {', '.join(self.names())}, or add a module that registers it (see docs/extending.md)",
            )
        return self._entries[name]

    def _load(self, name: str) -> None:
        """Import the built-in module of that name (it registers itself), else every one."""
        if self.package is None or self._all_loaded:
            return
        if name.isidentifier() and importlib.util.find_spec(f"{self.package}.{name}") is not None:
            importlib.import_module(f"{self.package}.{name}")
        if name not in self._entries:
            self._load_all()

    def _load_all(self) -> None:
        if self._all_loaded or self.package is None:
            return
        package = importlib.import_module(self.package)
        for module in pkgutil.iter_modules(package.__path__):
            importlib.import_module(f"{self.package}.{module.name}")
        self._all_loaded = True


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
