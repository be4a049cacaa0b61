"""Experiments as data: the job grid and the paper's tables from a validated config.

Tables and figures cite runs (which keys, their kind says: :mod:`clinsent.report.kinds`) as
``method`` or ``method@base_model`` (the base model defaults to ``report.base_model``, else the first one).
With tables or figures, the grid is exactly the cited runs; without, every method x base
model. Each run trains once per seed of its method (``methods.<m>.seeds``, else ``seeds``).
Methods declare their training data (:mod:`clinsent.data`); batch plans are keyed by what
shapes them (corpus, S_none share, duplicate strategy, batch size, steps), so methods that
train on the same batches share one plan per seed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from clinsent.config.sections import RunConfig
from clinsent.data.plan import SentencePlan
from clinsent.errors import InputError
from clinsent.finetune.config import CROSS_ENCODER
from clinsent.methods.config import resolve_methods
from clinsent.methods.entries import MethodEntry
from clinsent.registry import did_you_mean
from clinsent.report.kinds.base import entries as kind_entries
from clinsent.run_ref import Run, split_run


@dataclass
class Grid:
    runs: list[Run]
    seeds_of: dict[str, list[int]]
    default_base: str
    batch_plans: dict[str, SentencePlan] = field(default_factory=dict)  # key -> the batch plan (its shape)
    batch_plan_of: dict[str, str] = field(default_factory=dict)  # method -> its batch plan's key

    @property
    def jobs(self) -> list[tuple[str, str, int]]:
        return [(m, b, s) for m, b in self.runs for s in self.seeds_of[m]]

    @classmethod
    def from_config(cls, config: RunConfig, entries: Mapping[str, MethodEntry] | None = None) -> Grid:
        """The grid of a config; ``entries`` are its methods read through the registry (read here when not given)."""
        entries = entries if entries is not None else resolve_methods(config)
        methods, bases = config.methods, list(config.base_models)
        default_base = config.report.base_model or bases[0]
        if default_base not in bases:
            raise InputError(
                "config: report.base_model",
                f"{default_base!r} is not a key of base_models {bases}",
                "name one of them",
            )
        check_references(config)
        refs = cited_runs(config)
        if refs:
            runs = list(dict.fromkeys(parse_run(ref, where, methods, bases, default_base) for where, ref in refs))
        else:
            runs = [(m, b) for m in methods for b in bases]
        grid = cls(runs, {m: e.seeds for m, e in entries.items()}, default_base)
        for m in dict.fromkeys(m for m, _ in runs):
            need = entries[m].method.data_need() if entries[m].method.trains else None
            if isinstance(need, SentencePlan):
                grid.batch_plans[need.key()] = need.shape()
                grid.batch_plan_of[m] = need.key()
        return grid


def cited_runs(config: RunConfig) -> list[tuple[str, str]]:
    """(where, reference) for every run a table cell or a figure point cites (each kind says which)."""
    out = [ref for key, kind, entry in kind_entries(config) for ref in kind.runs(key, entry)]
    # the cross-encoder rows (finetune entries with cross_encoder: true) are no train job
    return [(where, ref) for where, ref in out if split_run(ref, "")[0] != CROSS_ENCODER]


def check_references(config: RunConfig) -> None:
    """Names that tables and figures cite (each kind says which): eval sets, sentence corpora, methods."""
    known = {
        "eval_sets": [*config.eval_sets, *config.finetune],
        "corpora": list(config.sentence_corpora),
        "methods": list(config.methods),
    }
    for key, kind, entry in kind_entries(config):
        for where, name, what in kind.names(key, entry):
            if name not in known[what]:
                section = {"corpora": "sentence_corpora"}.get(what, what)
                raise InputError(
                    f"config: {where}",
                    f"names {name!r}, which is not a key of {section} {known[what]}{did_you_mean(name, known[what])}",
                    f"add it under {section} or correct the name",
                )


def parse_run(ref: str, where: str, methods: Mapping[str, Any], bases: list[str], default_base: str) -> Run:
    method, base = split_run(ref, default_base)
    if method not in methods:
        raise InputError(
            f"config: {where}",
            f"cites method {method!r}, which is not a key of methods{did_you_mean(method, methods)}",
            "add it under methods or correct the name",
        )
    if base not in bases:
        raise InputError(
            f"config: {where}",
            f"cites base model {base!r}, which is not a key of base_models {bases}{did_you_mean(base, bases)}",
            "add it under base_models or correct the name",
        )
    return method, base
