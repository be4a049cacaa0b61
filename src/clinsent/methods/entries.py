"""The methods of a config as read (:class:`MethodEntry`: one ``methods.<name>``, built by
:func:`clinsent.methods.config.resolve_methods`) and the runs they take from each other: a
method's ``init_from`` (it starts from that method's trained model) and the trained runs its loss
loads (e.g. MixCSE's complementary model), each checked to be a trained method with the seeds
asked, with no cycle among them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from clinsent.config.declare import to_params
from clinsent.errors import InputError
from clinsent.methods import Method
from clinsent.registry import did_you_mean


@dataclass(frozen=True)
class MethodEntry:
    name: str
    method: Method
    seeds: list[int]
    postprocess: str
    whitening_dims: int | None
    selection_set: str | None = None
    derived: str = ""  # how steps were derived from epochs (shown in dry runs)
    init_from: str | None = None  # start from this method's trained model (same base model and seed)

    @property
    def objective(self) -> str:
        return self.method.name

    def train_params(self) -> dict[str, Any]:
        """What a train job's output depends on: the objective and its own knobs."""
        return {"objective": self.objective, "settings": to_params(self.method.settings)}


def run_models(entries: Mapping[str, MethodEntry], name: str) -> list[str]:
    """The methods whose trained models ``name``'s loss loads (its extra models that are keys of methods)."""
    return [m for m in entries[name].method.extra_models() if m in entries]


def check_run_models(entries: Mapping[str, MethodEntry]) -> None:
    """A run a loss loads (e.g. MixCSE's complementary model) is a trained method with this
    method's seeds, not the method itself, and no chain of such runs and ``init_from`` is a cycle."""
    for name, e in entries.items():
        for run in run_models(entries, name):
            where = f"config: methods.{name}"
            upstream = entries[run]
            if run == name or not upstream.method.trains:
                raise InputError(
                    where,
                    f"names {run!r}, which is {'itself' if run == name else 'not trained'}",
                    "name a trained method (its model of the same base model and seed is loaded)",
                )
            missing = sorted(set(e.seeds) - set(upstream.seeds))
            if missing:
                raise InputError(
                    where,
                    f"names {run!r}, which has no run for seed(s) {missing}",
                    f"give {run!r} these seeds too, or give {name!r} the seeds of {run!r}",
                )
    check_cycles(entries)


def _upstream(entries: Mapping[str, MethodEntry], name: str) -> list[str]:
    """The runs ``name``'s job needs trained first: its ``init_from`` and the runs its loss loads."""
    start = entries[name].init_from
    return ([start] if start else []) + run_models(entries, name)


def check_cycles(entries: Mapping[str, MethodEntry]) -> None:
    """No chain of ``init_from`` and loaded runs (e.g. MixCSE's complementary model) is a cycle;
    the error names ``init_from`` when the chain leaves the method through it."""
    for name in entries:
        stack, seen = [(name, [name])], set()
        while stack:
            current, path = stack.pop()
            for nxt in _upstream(entries, current):
                if nxt == name:
                    first = path[1] if len(path) > 1 else nxt  # the chain's first step from `name`
                    key = ".init_from" if first == entries[name].init_from else ""
                    raise InputError(
                        f"config: methods.{name}{key}",
                        f"the chain {' -> '.join([*path, nxt])} is a cycle",
                        "break the chain",
                    )
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append((nxt, [*path, nxt]))


def check_init_from(entries: Mapping[str, MethodEntry]) -> None:
    """``init_from`` (sequential training, e.g. SNLI+MultiNLI then MedNLI) names a trained method
    (its chains are checked for cycles with the loaded runs': :func:`check_cycles`)."""
    names = list(entries)
    for name, e in entries.items():
        if e.init_from is None:
            continue
        where = f"config: methods.{name}.init_from"
        if e.init_from not in entries:
            raise InputError(
                where,
                f"{e.init_from!r} is not a key of methods{did_you_mean(e.init_from, names)}",
                "name the method whose trained model this one starts from",
            )
        if not entries[e.init_from].method.trains:
            raise InputError(
                where,
                f"method {e.init_from!r} is not trained (objective {entries[e.init_from].objective})",
                "name a trained method, or start from a base model",
            )
