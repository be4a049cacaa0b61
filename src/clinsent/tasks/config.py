"""Read ``eval_sets.<name>`` entries through the task registry when the config is read.

An entry holds ``task`` (default ``sts``), ``curve`` (log it during training; the selection
set always is), ``base_models`` (evaluate only runs of these base models, e.g. a Chinese
probe only for the Chinese model; default all), ``evaluate`` (false: no zero-shot embed and
evaluate jobs, for a set that only trains or selects, e.g. a fine-tune train split) and
``embed_from`` (score another eval set's embeddings, whose texts include this set's: the
healthcare-LM analyses of one document task embed it once) and ``text_shareable`` (its texts are
public and may be shown in a shared table; false by default, and refused for a set derived from
the notes: :func:`clinsent.plan.checks.check_shown_texts`), checked by config/schema.yaml, and the task's
own keys, checked against its settings dataclass. The ``evaluation`` block supplies values for
the keys a task has and an entry does not set (e.g. ``positive_share``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from clinsent.config.declare import (
    build,
    check_shared,
    foreign_keys,
    key_owners,
    keys,
    to_params,
)
from clinsent.config.sections import EvalSetConfig, Evaluation, RunConfig
from clinsent.errors import InputError
from clinsent.registry import did_you_mean
from clinsent.tasks import TASKS, Task


@dataclass(frozen=True)
class EvalSetEntry:
    name: str
    task: Task
    curve: bool
    base_models: tuple[str, ...] | None = None
    evaluate: bool = True  # zero-shot embed and evaluate jobs for every run
    embed_from: str | None = None  # the eval set whose embeddings this one scores
    text_shareable: bool = False  # its texts are public: a shared table may show them

    def evaluates(self, base_model: str) -> bool:
        """Runs of this base model are scored on the set (zero-shot, or fine-tuned on it)."""
        return self.base_models is None or base_model in self.base_models

    def params(self) -> dict[str, Any]:
        """What an embed or evaluate job's output depends on."""
        return {"task": self.task.name, "settings": to_params(self.task.settings)}

    def embedded(self) -> str:
        """The eval set whose embeddings this one scores."""
        return self.embed_from or self.name

    def curve_params(self) -> dict[str, Any]:
        """What a train job's curve of this set depends on (the settings the headline reads; the
        others keep their defaults in the job, unused)."""
        settings = to_params(self.task.settings)
        wanted = self.task.curve_keys
        return {
            "task": self.task.name,
            "settings": settings if wanted is None else {k: v for k, v in settings.items() if k in wanted},
        }


def _owners() -> dict[str, list[str]]:
    return key_owners({n: TASKS.get(n).settings_class for n in TASKS.names()})


def resolve_eval_set(name: str, entry: EvalSetConfig, evaluation: Evaluation) -> EvalSetEntry:
    """One ``eval_sets.<name>`` entry: its task's keys typed by the task's settings (the shared
    ``evaluation`` values beneath them)."""
    where = f"config: eval_sets.{name}"
    cls = TASKS.get(entry.task, where=f"{where}.task")
    own = dict(entry.options)
    allowed = set(keys(cls.settings_class))
    build(cls.settings_class, own, where, foreign=foreign_keys(cls.settings_class, _owners(), "task"))
    shared = {k: v for k, v in evaluation.shared.items() if k in allowed}
    settings: Any = build(cls.settings_class, {**shared, **own}, where)
    bases = entry.base_models
    if not cls.zero_shot and (entry.curve or entry.embed_from):
        raise InputError(
            where,
            f"task {cls.name} is scored by finetune entries only, not from embeddings",
            "drop curve and embed_from, and name it as a finetune entry's train set",
        )
    return EvalSetEntry(
        name,
        cls(name, settings),
        entry.curve,
        tuple(bases) if bases is not None else None,
        entry.evaluate and cls.zero_shot,  # a token task plans no evaluate job
        entry.embed_from,
        entry.text_shareable,
    )


def resolve_eval_sets(config: RunConfig) -> dict[str, EvalSetEntry]:
    evaluation = config.evaluation
    check_shared(evaluation.shared, "evaluation", _owners())
    out = {name: resolve_eval_set(name, e, evaluation) for name, e in config.eval_sets.items()}
    selection = config.selection_set
    if selection in out and not out[selection].task.zero_shot:
        raise InputError(
            "config: selection_set",
            f"{selection!r} (task {out[selection].task.name}) is scored by finetune entries only, not during training",
            "select on an eval set scored from embeddings",
        )
    known = list(config.base_models)
    for name, e in out.items():
        source = e.embed_from
        if source is not None and (source not in out or out[source].embed_from or source == name):
            raise InputError(
                f"config: eval_sets.{name}.embed_from",
                f"{source!r} is not an eval set that embeds its own texts{did_you_mean(source, list(out))}",
                "name an eval set without embed_from whose texts include this set's",
            )
        for b in e.base_models or ():
            if b not in known:
                raise InputError(
                    f"config: eval_sets.{name}.base_models",
                    f"{b!r} is not a key of base_models {known}{did_you_mean(b, known)}",
                    "name a base model, or drop the key",
                )
    return out


def quality_task(entry_params: Mapping[str, Any]) -> Task | None:
    """A corpus embedding's quality set as its task, rebuilt in the job from the entry's params
    (:meth:`clinsent.plan.files.RunFiles.corpus_params` adds the set's own params as
    ``quality_task``); None: the entry names none."""
    if "quality_task" not in entry_params:
        return None
    return task_from_params(entry_params["quality_set"], entry_params["quality_task"])


def task_from_params(set_name: str, params: Mapping[str, Any]) -> Task:
    """Rebuild an eval set's task inside a job from its rule's params (already validated)."""
    cls = TASKS.get(params["task"])
    return cls(set_name, build(cls.settings_class, params["settings"]))
