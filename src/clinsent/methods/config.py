"""Read ``methods.<name>`` entries through the registry, when the config is read (dry runs too).

An entry holds ``objective``, ``seeds``, ``postprocess`` and ``whitening_dims`` (checked by
config/schema.yaml; they are not training settings) and the objective's own knobs, checked
against its settings dataclass: an unknown or misspelt key, or another objective's knob, is
an error naming the method, the key, the allowed keys and the closest match. The shared
``training`` block supplies values for the knobs a method has and does not set itself
(``training.mini_batch`` to the objectives with in-batch negatives, ``training.accumulate`` to
the others: :meth:`clinsent.methods.base.Method.check_memory`).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from clinsent.config.declare import (
    build,
    check_shared,
    foreign_keys,
    given,
    key_owners,
    keys,
    to_params,
)
from clinsent.config.sections import MethodConfig, RunConfig, Training
from clinsent.corpus.sentences import corpus_paths, corpus_size, steps_for_epochs
from clinsent.data.plan import SentencePlan
from clinsent.errors import InputError
from clinsent.methods import METHODS, Method
from clinsent.methods.base import rows_source
from clinsent.methods.entries import MethodEntry, check_init_from, check_run_models
from clinsent.methods.knobs import TRAINED_HEAD_POOLINGS, SentencePlanSettings, TrainedSettings
from clinsent.registry import did_you_mean


def _owners() -> dict[str, list[str]]:
    return key_owners({n: METHODS.get(n).settings_class for n in METHODS.names()})


def chunk_keys(cls: type[Method]) -> set[str]:
    """The training block's memory settings a method does not take: accumulate where the loss has
    in-batch negatives, mini_batch where it has none, both where it steps only in one pass."""
    if not cls.steps_in_chunks:
        return {"accumulate", "mini_batch"}
    return {"accumulate" if cls.in_batch_negatives else "mini_batch"}


def resolve_method(
    name: str,
    entry: MethodConfig,
    training: Training,
    default_seeds: list[int],
    config: RunConfig | None = None,
) -> MethodEntry:
    """One ``methods.<name>`` entry: its knobs typed by its objective's settings (the shared
    ``training`` values beneath them), its corpus, epochs, seeds and selection set checked."""
    where = f"config: methods.{name}"
    cls = METHODS.get(str(entry.objective), where=f"{where}.objective")
    knobs = dict(entry.knobs)
    allowed = set(keys(cls.settings_class))
    shared = {
        k: v for k, v in training.shared.items() if k in allowed and k not in chunk_keys(cls)
    }  # each applies where it can
    build(cls.settings_class, knobs, where, foreign=foreign_keys(cls.settings_class, _owners(), "objective"))
    settings = build(cls.settings_class, {**shared, **knobs}, where)
    config = config or RunConfig()
    _check_source(where, settings, config)
    settings, derived = _resolve_epochs(where, settings, knobs, shared, config)
    method = cls(settings)
    if settings.pooling in TRAINED_HEAD_POOLINGS and not method.trains:
        raise InputError(
            f"{where}.pooling",
            f"{settings.pooling} keeps an MLP head that objective {cls.name} would leave untrained (random)",
            "use cls or cls_before_pooler for an untrained model",
        )
    if isinstance(need := method.data_need(), SentencePlan) and need.entities and need.source != "notes":
        raise InputError(
            f"{where}.sentences",
            f"objective {cls.name} needs linked entities, a sentence corpus has none",
            "train it on the notes pipeline's sets (sentences: notes)",
        )
    method.check(where, config)
    method.check_memory(where)
    seeds = _seeds(where, entry, default_seeds)
    if isinstance(settings, TrainedSettings) and settings.steps == 0:
        raise InputError(
            f"{where}.steps",
            f"steps: 0 trains nothing, so objective {cls.name} would be an untrained copy of the base model",
            "give steps > 0 (or epochs), or use objective: none for the untrained baseline",
        )
    selection = entry.selection_set if "selection_set" in given(entry) else config.selection_set
    if selection is not None and selection not in config.eval_sets:
        sets = list(config.eval_sets)
        raise InputError(
            f"{where}.selection_set",
            f"{selection!r} is not a key of eval_sets {sets}{did_you_mean(str(selection), sets)}",
            "name an eval set, or null to keep the last step",
        )
    return MethodEntry(
        name,
        method,
        seeds,
        entry.postprocess,
        entry.whitening_dims,
        selection,
        derived,
        entry.init_from,
    )


def _seeds(where: str, entry: MethodConfig, default_seeds: list[int]) -> list[int]:
    """The method's seeds (its own, else the config's), each listed once."""
    seeds = [int(s) for s in (entry.seeds or default_seeds)]
    if len(set(seeds)) < len(seeds):
        twice = next(s for s in seeds if seeds.count(s) > 1)
        key = f"{where}.seeds" if entry.seeds else "config: seeds"
        raise InputError(key, f"seed {twice} is listed twice {seeds}", "list each seed once")
    return seeds


def _check_source(where: str, s: Any, config: RunConfig) -> None:
    """A plain sentence corpus must exist in ``sentence_corpora`` and has neither S_ent nor S_none."""
    if not isinstance(s, SentencePlanSettings):
        return
    if s.sentences == "notes":  # (a workflow without `notes` stops on it in common.smk)
        return
    corpora = list(config.sentence_corpora)
    if s.sentences not in corpora:
        raise InputError(
            f"{where}.sentences",
            f"{s.sentences!r} is neither notes nor a key of sentence_corpora "
            f"{corpora}{did_you_mean(s.sentences, corpora)}",
            "name a sentence_corpora entry, or notes",
        )
    if s.corpus != "s_all" or s.none_share > 0 or s.duplicates != "naive":
        raise InputError(
            where,
            f"corpus {s.corpus}, none_share {s.none_share}, duplicates {s.duplicates} need "
            f"entities; sentence corpus {s.sentences!r} has none",
            "leave corpus, none_share and duplicates at their defaults (s_all, 0, naive)",
        )
    if isinstance(s, TrainedSettings) and s.steps > 0:
        size = _size(s.sentences, config)
        if size is not None and math.ceil(s.fraction * size) < s.batch_size:
            raise InputError(
                where,
                f"fraction {s.fraction:g} of sentence corpus {s.sentences!r} is "
                f"{math.ceil(s.fraction * size)} sentences, fewer than a batch of {s.batch_size}",
                "raise fraction or the corpus' sample, or lower batch_size",
            )


def _size(name: str, config: RunConfig) -> int | None:
    entry = config.sentence_corpora[name]
    placeholders = config.placeholders_ok
    stamps = [os.stat(p).st_mtime_ns if os.path.exists(p) else None for p in corpus_paths(entry.path)]
    key = (name, json.dumps([to_params(entry), stamps], sort_keys=True), placeholders)
    if key not in _SIZES:  # counted once per config read, however many methods train on the corpus
        _SIZES[key] = corpus_size(name, entry, placeholders)
    return _SIZES[key]


_SIZES: dict[tuple[str, str, bool], int | None] = {}


def _resolve_epochs(
    where: str, s: Any, knobs: Mapping[str, Any], shared: Mapping[str, Any], config: RunConfig
) -> tuple[Any, str]:
    """Steps from ``epochs`` over the sentence corpus (the method's own steps/epochs win over the
    training block's); epochs is kept in the settings beside the derived steps. Over training
    rows (``train_data``) the steps are derived in the train job
    (:func:`clinsent.train.trainer.steps_from_epochs`), the rows being a job's output."""
    if not isinstance(s, TrainedSettings):
        return s, ""
    for level, values in ((where, knobs), ("config: training", shared)):
        if "epochs" in values and "steps" in values and values.get("epochs") is not None:
            raise InputError(level, "sets both steps and epochs", "keep one of them")
    uses_epochs = s.epochs is not None and ("epochs" in knobs or "steps" not in knobs)
    if not uses_epochs:
        return (replace(s, epochs=None) if s.epochs is not None else s), ""
    if rows_source(s):  # training rows (e.g. NLI triplets) or documents
        return s, (
            f"{where}: epochs {s.epochs:g} over training rows {rows_source(s)!r} (batch "
            f"{s.batch_size}): steps counted when the train job reads the rows"
        )
    if not isinstance(s, SentencePlanSettings) or s.sentences == "notes":
        raise InputError(
            f"{where}.epochs",
            "epochs needs a sentence corpus whose size is known when the config is "
            "read (sentences: a key of sentence_corpora), or training rows (train_data)",
            "give steps instead",
        )
    size = _size(s.sentences, config)
    if size is None:
        raise InputError(
            f"{where}.epochs",
            f"the size of sentence corpus {s.sentences!r} is not known when the config "
            "is read (a dry run with placeholders, or documents to split)",
            f"give sentence_corpora.{s.sentences}.sample, or steps",
        )
    steps = steps_for_epochs(float(s.epochs or 0), size, s.batch_size)
    note = (
        f"{where}: epochs {s.epochs:g} over sentence corpus {s.sentences!r} ({size} sentences, "
        f"batch {s.batch_size}) = {steps} steps"
    )
    return replace(s, steps=steps), note


def resolve_methods(config: RunConfig) -> dict[str, MethodEntry]:
    training = config.training
    check_shared(training.shared, "training", _owners())
    seeds = list(config.seeds)
    entries = {name: resolve_method(name, entry, training, seeds, config) for name, entry in config.methods.items()}
    check_init_from(entries)
    check_run_models(entries)
    return entries


def method_from_params(params: Mapping[str, Any]) -> Method:
    """Rebuild a method inside a job from its rule's ``method`` param (already validated): what
    :meth:`clinsent.methods.entries.MethodEntry.train_params` wrote (the objective and its
    settings), with the trained runs its loss loads (``run_models``, e.g. MixCSE's complementary
    model) where it has some."""
    cls = METHODS.get(params["objective"])
    method: Method = cls(build(cls.settings_class, params["settings"]))
    return method.with_run_models(params.get("run_models", {}))


def default_settings(objective: str) -> dict[str, Any]:
    """An objective's knobs at their defaults, as config keys and values."""
    return to_params(METHODS.get(objective).settings_class())
