"""Read ``finetune.<name>`` entries when the config is read (dry runs too).

An entry names three eval sets of one task: ``train`` (its pairs train: the task says how,
:meth:`clinsent.tasks.base.Task.training_pairs`), ``validation`` (its headline picks the
epoch) and ``test`` (reported). The results appear in ``summary.csv`` under the entry's name as
eval set: for every run of ``methods`` (default: every method) fine-tuned as a bi-encoder, and,
with ``cross_encoder: true``, for the method ``cross_encoder`` (sentence-transformers'
``CrossEncoder`` fine-tuned from each base model).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from clinsent.errors import InputError
from clinsent.registry import did_you_mean
from clinsent.settings import knob, parse_settings, to_config

CROSS_ENCODER = "cross_encoder"  # the method name of cross-encoder rows in summary.csv


@dataclass(frozen=True)
class FinetuneSettings:
    train: str = knob("", "the eval set whose pairs train (e.g. BIOSSES' BLURB train split)", required=True)
    validation: str = knob("", "the eval set whose headline metric picks the epoch", required=True)
    test: str = knob("", "the eval set reported (same task as train and validation)", required=True)
    methods: tuple[str, ...] | None = knob(None, "the methods whose trained models are fine-tuned (default: all)")
    cross_encoder: bool = knob(False, "also fine-tune sentence-transformers' CrossEncoder from each base model "
                                      "(BioSimCSE Table 2)")
    epochs: int = knob(4, "passes over the training pairs; the best epoch on validation is reported", minimum=1)
    batch_size: int = knob(16, "pairs per batch (BioSimCSE: 8 or 16)", minimum=1)
    learning_rate: float = knob(2e-5, "AdamW peak learning rate (BioSimCSE: 1e-5, 2e-5 or 5e-5)", exclusiveMinimum=0)
    warmup_ratio: float = knob(0.1, "share of the steps with a linear warm-up, then linear decay", minimum=0,
                               maximum=1)
    weight_decay: float = knob(0.01, "AdamW weight decay (sentence-transformers' default)", minimum=0)
    max_length: int = knob(128, "tokens per sentence (cross-encoder: per pair)", minimum=8)
    margin: float = knob(0.5, "binary tasks: the margin of the online contrastive loss", exclusiveMinimum=0)


@dataclass(frozen=True)
class FinetuneEntry:
    name: str
    settings: FinetuneSettings

    def runs(self, method: str) -> bool:
        return self.settings.methods is None or method in self.settings.methods

    def params(self) -> dict[str, Any]:
        """What a fine-tune job's output depends on: not which methods or whether cross-encoders
        run (changing those adds or drops jobs, and reruns none)."""
        return {k: v for k, v in to_config(self.settings).items() if k not in ("methods", "cross_encoder")}


def resolve_finetunes(config: Mapping[str, Any], eval_sets: Mapping[str, Any]) -> dict[str, FinetuneEntry]:
    """Check each entry: its eval sets exist and share a task whose pairs can train; its methods
    exist; its name is no eval set's."""
    out = {}
    methods = list(config.get("methods") or {})
    if CROSS_ENCODER in methods:
        raise InputError(f"config: methods.{CROSS_ENCODER}", "the name is taken by the cross-encoder rows",
                         "rename the method")
    for name, entry in (config.get("finetune") or {}).items():
        where = f"config: finetune.{name}"
        if name in eval_sets:
            raise InputError(where, "the name is also an eval set's: both would be rows of summary.csv",
                             "rename the fine-tune entry (e.g. <set>_ft)")
        s: FinetuneSettings = parse_settings(FinetuneSettings, dict(entry or {}), where)
        sets = {role: getattr(s, role) for role in ("train", "validation", "test")}
        for role, set_name in sets.items():
            if set_name not in eval_sets:
                known = list(eval_sets)
                raise InputError(f"{where}.{role}", f"{set_name!r} is not a key of eval_sets{did_you_mean(set_name, known)}",
                                 f"name the eval set of the {role} split")
        tasks = {role: eval_sets[n].task for role, n in sets.items()}
        if len({t.name for t in tasks.values()}) != 1:
            raise InputError(where, "train, validation and test are eval sets of different tasks "
                             f"({', '.join(f'{r}: {t.name}' for r, t in tasks.items())})", "name three sets of one task")
        if not tasks["train"].pair_training:
            raise InputError(f"{where}.train", f"eval set {s.train!r} (task {tasks['train'].name}) has no training "
                             "pairs: the task cannot be fine-tuned", "fine-tune an STS or RQE eval set")
        if s.train in (s.validation, s.test):
            raise InputError(where, f"eval set {s.train!r} both trains and is scored", "name a distinct train split")
        for m in s.methods or ():
            if m not in methods:
                raise InputError(f"{where}.methods", f"{m!r} is not a key of methods{did_you_mean(m, methods)}",
                                 "name a method")
        out[name] = FinetuneEntry(name, s)
    return out
