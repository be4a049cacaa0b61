"""What a rule's declaration is (:class:`Rule`): its outputs' patterns and its inputs for a job's
wildcards; the flags an output may carry (:class:`Folder`, :class:`Scratch`); the collection one
module of rules declares (:class:`Declarations`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from clinsent.plan.layout import Plan

Files = str | list[str]
Declared = dict[str, Files] | list[str]  # named, or positional
Wildcards = Mapping[str, str]
Inputs = Callable[["Plan", Wildcards], Declared]


class Folder(str):
    """An output that is a folder (Snakemake's ``directory()``)."""

    __slots__ = ()


class Scratch(str):
    """An output removed once every job that reads it is done (Snakemake's ``temp()``)."""

    __slots__ = ()


@dataclass(frozen=True)
class Rule:
    """One rule of the DAG: its outputs' patterns and its inputs for a job's wildcards."""

    name: str
    outputs: Callable[[Plan], Declared]
    inputs: Inputs


class Declarations(dict[str, Rule]):
    """The rules one module declares, by name."""

    def rule(self, outputs: Callable[[Plan], Declared], name: str = "") -> Callable[[Inputs], Inputs]:
        """Declare a rule: its outputs, and (the decorated function) its inputs; named as the
        function unless ``name`` is given."""

        def register(inputs: Inputs) -> Inputs:
            key = name or inputs.__name__
            if key in self:
                raise ValueError(f"rule {key} is declared twice")
            self[key] = Rule(key, outputs, inputs)
            return inputs

        return register


def files_of(declared: Declared) -> list[str]:
    """Every file of a rule's inputs or outputs, in order."""
    items = declared.values() if isinstance(declared, dict) else declared
    return [f for item in items for f in ([item] if isinstance(item, str) else item)]


def listed(path: Files) -> list[str]:
    """A file, or none (a dry run's missing placeholder), as a list."""
    return [path] if isinstance(path, str) else list(path)
