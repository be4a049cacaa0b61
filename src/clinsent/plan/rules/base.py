"""What a rule's declaration is (:class:`Rule`): its outputs' patterns and its inputs for a job's
wildcards; the flags an output may carry (:class:`Folder`, :class:`Scratch`) and a raw input
(:class:`Raw`); the collection one module of rules declares (:class:`Declarations`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from clinsent.plan.files import RawInput
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


class Raw(str):
    """A raw input (the user's file or folder, :meth:`clinsent.plan.files.RunFiles.raw_inputs`):
    Snakemake's ``ancient()``, its modification time never reruns a job; the input's key file
    (``input_keys``), rewritten only when its content changes, does."""

    __slots__ = ()


@dataclass(frozen=True)
class Rule:
    """One rule of the DAG: its outputs' patterns and its inputs for a job's wildcards."""

    name: str
    outputs: Callable[[Plan], Declared]
    given: Inputs  # the inputs as the rule's module declares them

    def inputs(self, plan: Plan, wildcards: Wildcards) -> Declared:
        """The job's inputs: the declared ones, each raw input marked :class:`Raw` and its key file
        added (:func:`keyed`)."""
        return keyed(plan.files.raw_inputs, self.given(plan, wildcards))


def keyed(raw: Mapping[str, RawInput], declared: Declared) -> Declared:
    """A job's inputs with each raw input (``raw``: by the path the rules declare) marked
    :class:`Raw` (its time never reruns the job) and its key file added, last: under
    ``input_keys`` in a named list, at the end of a positional one."""
    keys: list[str] = []

    def mark(f: str) -> str:
        found = raw.get(f)
        if found is None:
            return f
        if found.key not in keys:
            keys.append(found.key)
        return Raw(f)

    if isinstance(declared, dict):
        out: dict[str, Files] = {
            k: mark(v) if isinstance(v, str) else [mark(f) for f in v] for k, v in declared.items()
        }
        if keys:
            out["input_keys"] = keys
        return out
    return [*(mark(f) for f in declared), *keys]


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
