"""Read ``methods.<name>`` entries through the registry, when the config is read (dry runs too).

An entry holds ``objective``, ``seeds``, ``postprocess`` and ``whitening_dims`` (checked by
config/schema.yaml; they are not training settings) and the objective's own knobs, checked
against its settings dataclass: an unknown or misspelt key, or another objective's knob, is
an error naming the method, the key, the allowed keys and the closest match. The shared
``training`` block supplies values for the knobs a method has and does not set itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from clinsent.methods import METHODS, Method
from clinsent.settings import check_shared, foreign_keys, from_config, key_owners, keys, parse_settings, to_config

ENTRY_KEYS = ("objective", "seeds", "postprocess", "whitening_dims")
NOT_SETTINGS = ("threads",)  # keys of `training` that are no method's knob


@dataclass(frozen=True)
class MethodEntry:
    name: str
    method: Method
    seeds: list[int]
    postprocess: str
    whitening_dims: int | None

    @property
    def objective(self) -> str:
        return self.method.name

    def train_params(self) -> dict[str, Any]:
        """What a train job's output depends on: the objective and its own knobs."""
        return {"objective": self.objective, "settings": to_config(self.method.settings)}


def _owners() -> dict[str, list[str]]:
    return key_owners({n: METHODS.get(n).settings_class for n in METHODS.names()})


def resolve_method(name: str, entry: Mapping[str, Any], training: Mapping[str, Any],
                   default_seeds: list[int], config: Mapping[str, Any] | None = None) -> MethodEntry:
    where = f"config: methods.{name}"
    cls = METHODS.get(str(entry.get("objective")), where=f"{where}.objective")
    knobs = {k: v for k, v in entry.items() if k not in ENTRY_KEYS}
    allowed = set(keys(cls.settings_class))
    shared = {k: v for k, v in training.items() if k in allowed and k not in NOT_SETTINGS}
    parse_settings(cls.settings_class, knobs, where, foreign=foreign_keys(cls.settings_class, _owners(), "objective"))
    settings = parse_settings(cls.settings_class, {**shared, **knobs}, where)
    method = cls(settings)
    method.check(where, config or {})
    seeds = [int(s) for s in (entry.get("seeds") or default_seeds)]
    return MethodEntry(name, method, seeds, str(entry.get("postprocess", "none")), entry.get("whitening_dims"))


def resolve_methods(config: Mapping[str, Any]) -> dict[str, MethodEntry]:
    training = config.get("training") or {}
    check_shared(training, "training", _owners(), NOT_SETTINGS)
    seeds = [int(s) for s in config.get("seeds", [0])]
    return {name: resolve_method(name, entry, training, seeds, config) for name, entry in config["methods"].items()}


def method_from_params(objective: str, settings: Mapping[str, Any]) -> Method:
    """Rebuild a method inside a job from its rule's params (already validated)."""
    cls = METHODS.get(objective)
    return cls(from_config(cls.settings_class, settings))
