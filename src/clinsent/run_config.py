"""A config parsed once, at the door, into its parts (:class:`RunConfig`).

The planner (:func:`clinsent.plan.checks.build_plan`) parses a validated config here, and the
registries and every module below it receive these typed parts, never the raw mapping: the
methods' entries (read through the method registry into settings), the eval sets', the fine-tune
entries', the tables and figures (read through the kinds), the training data, the sentence
corpora and the job grid's inputs. Each section is the config's own entry mapping (the same
objects, so what a kind fills in is what the rules see), or empty where the config has none.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

Entries = Mapping[str, Mapping[str, Any]]


def _entries(config: Mapping[str, Any], key: str) -> Entries:
    value = config.get(key)
    return value if isinstance(value, Mapping) else {}


@dataclass(frozen=True)
class RunConfig:
    """The parts of one config (see the module): what the registries and the checks read."""

    results: str = "results"
    seeds: tuple[int, ...] = (0,)
    base_models: Mapping[str, Any] = field(default_factory=dict)
    training: Mapping[str, Any] = field(default_factory=dict)  # the knobs every method shares
    methods: Entries = field(default_factory=dict)
    selection_set: str | None = None
    eval_sets: Entries = field(default_factory=dict)
    evaluation: Mapping[str, Any] = field(default_factory=dict)
    finetune: Entries = field(default_factory=dict)
    tables: Entries = field(default_factory=dict)
    figures: Entries = field(default_factory=dict)
    training_data: Entries = field(default_factory=dict)
    sentence_corpora: Entries = field(default_factory=dict)
    doc_tasks: Entries = field(default_factory=dict)
    corpus_embeddings: Entries = field(default_factory=dict)
    models: Entries = field(default_factory=dict)  # the benchmark's models
    report: Mapping[str, Any] = field(default_factory=dict)
    placeholders_ok: bool = False  # a dry run's placeholder paths: missing inputs left out

    @classmethod
    def parse(cls, config: Mapping[str, Any]) -> RunConfig:
        """The parts of a (validated) config; a section it lacks is empty."""
        return cls(
            results=str(config.get("results", "results")),
            seeds=tuple(int(s) for s in config.get("seeds", [0])),
            base_models=_entries(config, "base_models"),
            training=_entries(config, "training"),
            methods=_entries(config, "methods"),
            selection_set=config.get("selection_set"),
            eval_sets=_entries(config, "eval_sets"),
            evaluation=_entries(config, "evaluation"),
            finetune=_entries(config, "finetune"),
            tables=_entries(config, "tables"),
            figures=_entries(config, "figures"),
            training_data=_entries(config, "training_data"),
            sentence_corpora=_entries(config, "sentence_corpora"),
            doc_tasks=_entries(config, "doc_tasks"),
            corpus_embeddings=_entries(config, "corpus_embeddings"),
            models=_entries(config, "models"),
            report=_entries(config, "report"),
            placeholders_ok=str(config.get("placeholders_ok", False)).lower() == "true",
        )

    def section(self, name: str) -> Mapping[str, Any]:
        """A section by its config key (the checks that go over several sections by name)."""
        value: Mapping[str, Any] = getattr(self, name)
        return value
