"""Read ``finetune.<name>`` entries when the config is read (dry runs too).

An entry names three eval sets of one task: ``train`` (its pairs train: the task says how,
:meth:`clinsent.tasks.base.Task.training_pairs`), ``validation`` (its headline picks the
epoch) and ``test`` (reported). The results appear in ``summary.csv`` under the entry's name as
eval set: for every run of ``methods`` (default: every method) fine-tuned as a bi-encoder, and,
with ``cross_encoder: true``, for the method ``cross_encoder`` (sentence-transformers'
``CrossEncoder`` fine-tuned from each base model).

An entry on a document or token classification set (``doc_classification``,
``token_classification``) names only ``train``: the set's own train split trains and its test
split scores every epoch (the healthcare-LM paper's protocol); ``frozen``, ``freeze_layers`` and
(documents) ``per_class`` and ``draw_seed`` choose the setting. ``base_models`` restricts the runs fine-tuned.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from clinsent.config.declare import build, knob, to_params
from clinsent.config.sections import RunConfig
from clinsent.errors import InputError
from clinsent.gpu.precision import ALIASES as PRECISION_ALIASES
from clinsent.gpu.precision import PRECISION_DOC, Precision
from clinsent.registry import did_you_mean

CROSS_ENCODER = "cross_encoder"  # the method name of cross-encoder rows in summary.csv


@dataclass(frozen=True)
class FinetuneSettings:
    train: str = knob("", "the eval set whose pairs train (e.g. BIOSSES' BLURB train split)", required=True)
    validation: str = knob(
        "",
        "the eval set whose headline metric picks the epoch (document and token tasks: "
        "omit; the train set's test split picks and is reported, the paper's protocol)",
    )
    test: str = knob("", "the eval set reported (same task as train and validation; document and token tasks: omit)")
    methods: tuple[str, ...] | None = knob(None, "the methods whose trained models are fine-tuned (default: all)")
    base_models: tuple[str, ...] | None = knob(
        None, "only runs of these base models (default: those the test set evaluates)"
    )
    cross_encoder: bool = knob(
        False, "also fine-tune sentence-transformers' CrossEncoder from each base model (BioSimCSE Table 2)"
    )
    epochs: int = knob(4, "passes over the training pairs; the best epoch on validation is reported", minimum=1)
    batch_size: int = knob(16, "pairs per batch (BioSimCSE: 8 or 16)", minimum=1)
    learning_rate: float = knob(2e-5, "AdamW peak learning rate (BioSimCSE: 1e-5, 2e-5 or 5e-5)", exclusiveMinimum=0)
    warmup_ratio: float = knob(
        0.1, "share of the steps with a linear warm-up, then linear decay", minimum=0, maximum=1
    )
    weight_decay: float = knob(0.01, "AdamW weight decay (sentence-transformers' default)", minimum=0)
    max_length: int = knob(128, "tokens per sentence (cross-encoder: per pair)", minimum=8)
    precision: Precision = knob("auto", PRECISION_DOC, aliases=PRECISION_ALIASES)
    margin: float = knob(0.5, "binary tasks: the margin of the online contrastive loss", exclusiveMinimum=0)
    frozen: bool = knob(False, "document and token tasks: freeze the whole encoder (only the head trains)")
    freeze_layers: int = knob(
        0,
        "document and token tasks: freeze the embedding layer and the first k transformer layers "
        "(the paper's Figure 4)",
        minimum=0,
    )
    per_class: int | None = knob(
        None,
        "document tasks: few-shot, n training documents per class drawn with the "
        "job's seed (the paper's Figure 3, Table 16)",
        minimum=1,
    )
    draw_seed: int | None = knob(
        None,
        "document tasks, few-shot: draw the n documents with this seed in every job "
        "(every model and seed trains on the same documents, as the frozen few-shot "
        "eval sets do; null: each job's own seed, a new draw per seed)",
        minimum=0,
    )


DOC_KEYS = ("frozen", "freeze_layers", "per_class", "draw_seed")  # keys of document- and token-task entries only
PAIR_KEYS = ("margin", "cross_encoder")  # keys of pair-task entries only
# an entry's kind -> the keys of the other kinds, left out of its params
FOREIGN_KEYS = {"pairs": DOC_KEYS, "documents": PAIR_KEYS, "tokens": PAIR_KEYS}
# an own-splits kind -> the keys it refuses (a value set), with why
REFUSED_KEYS = {
    "documents": {},
    "tokens": {
        "per_class": "few-shot per class applies to document tasks",
        "draw_seed": "the few-shot draw applies to document tasks",
    },
}


@dataclass(frozen=True)
class FinetuneEntry:
    name: str
    settings: FinetuneSettings
    kind: str = "pairs"  # pairs (STS, RQE), documents (doc_classification) or tokens (token_classification)

    def runs(self, method: str, base_model: str | None = None) -> bool:
        return (self.settings.methods is None or method in self.settings.methods) and (
            base_model is None or self.on_base(base_model)
        )

    def on_base(self, base_model: str) -> bool:
        return self.settings.base_models is None or base_model in self.settings.base_models

    def params(self) -> dict[str, Any]:
        """What a fine-tune job's output depends on: not which methods, base models or whether
        cross-encoders run (changing those adds or drops jobs, and reruns none)."""
        return {
            k: v
            for k, v in to_params(self.settings).items()
            if k not in ("methods", "base_models", "cross_encoder", *FOREIGN_KEYS[self.kind])
        }


def resolve_finetunes(config: RunConfig, eval_sets: Mapping[str, Any]) -> dict[str, FinetuneEntry]:
    """Check each entry: its eval sets exist and share a task whose pairs can train; its methods
    exist; its name is no eval set's."""
    out = {}
    methods = list(config.methods)
    if CROSS_ENCODER in methods:
        raise InputError(
            f"config: methods.{CROSS_ENCODER}", "the name is taken by the cross-encoder rows", "rename the method"
        )
    bases = list(config.base_models)
    for name, entry in config.finetune.items():
        where = f"config: finetune.{name}"
        if name in eval_sets:
            raise InputError(
                where,
                "the name is also an eval set's: both would be rows of summary.csv",
                "rename the fine-tune entry (e.g. <set>_ft)",
            )
        s: FinetuneSettings = build(FinetuneSettings, dict(entry.options), where)
        for b in s.base_models or ():
            if b not in bases:
                raise InputError(
                    f"{where}.base_models",
                    f"{b!r} is not a key of base_models{did_you_mean(b, bases)}",
                    "name a base model, or drop the key",
                )
        if s.train not in eval_sets:
            raise InputError(
                f"{where}.train",
                f"{s.train!r} is not a key of eval_sets{did_you_mean(s.train, list(eval_sets))}",
                "name the eval set of the train split",
            )
        task = eval_sets[s.train].task
        if task.doc_training or task.token_training:
            out[name] = _own_splits_entry(name, s, eval_sets, methods, "documents" if task.doc_training else "tokens")
            continue
        _check_pair_entry(where, s, eval_sets, methods)
        out[name] = FinetuneEntry(name, s)
    return out


def _check_pair_entry(where: str, s: FinetuneSettings, eval_sets: Mapping[str, Any], methods: list[str]) -> None:
    """A pair entry (STS, RQE): three eval sets of one task whose pairs train, the train set
    distinct from the scored ones, known methods, no document or token keys."""
    for role in ("validation", "test"):
        if not getattr(s, role):
            raise InputError(f"{where}.{role}", "missing", f"name the eval set of the {role} split")
    for key in DOC_KEYS:
        if getattr(s, key) != getattr(FinetuneSettings, key):
            raise InputError(
                f"{where}.{key}", "applies to document and token classification entries only", "drop the key"
            )
    sets = {role: getattr(s, role) for role in ("train", "validation", "test")}
    for role, set_name in sets.items():
        if set_name not in eval_sets:
            known = list(eval_sets)
            raise InputError(
                f"{where}.{role}",
                f"{set_name!r} is not a key of eval_sets{did_you_mean(set_name, known)}",
                f"name the eval set of the {role} split",
            )
    tasks = {role: eval_sets[n].task for role, n in sets.items()}
    if len({t.name for t in tasks.values()}) != 1:
        raise InputError(
            where,
            "train, validation and test are eval sets of different tasks "
            f"({', '.join(f'{r}: {t.name}' for r, t in tasks.items())})",
            "name three sets of one task",
        )
    if not tasks["train"].pair_training:
        raise InputError(
            f"{where}.train",
            f"eval set {s.train!r} (task {tasks['train'].name}) has no training pairs: the task cannot be fine-tuned",
            "fine-tune an STS, RQE, doc_classification or token_classification eval set",
        )
    if s.train in (s.validation, s.test):
        raise InputError(where, f"eval set {s.train!r} both trains and is scored", "name a distinct train split")
    for m in s.methods or ():
        if m not in methods:
            raise InputError(
                f"{where}.methods", f"{m!r} is not a key of methods{did_you_mean(m, methods)}", "name a method"
            )


def _own_splits_entry(
    name: str, s: FinetuneSettings, eval_sets: Mapping[str, Any], methods: list[str], kind: str
) -> FinetuneEntry:
    """A document or token classification entry: its train set's own splits train and score."""
    where = f"config: finetune.{name}"
    for key, why in REFUSED_KEYS[kind].items():
        if getattr(s, key) is not None:
            raise InputError(f"{where}.{key}", why, "drop the key")
    for role in ("validation", "test"):
        if getattr(s, role) not in ("", s.train):
            raise InputError(
                f"{where}.{role}", f"a {kind[:-1]} task is scored on its train set's test split", "drop the key"
            )
    if s.cross_encoder:
        raise InputError(f"{where}.cross_encoder", f"cross-encoders score pairs, not {kind}", "drop the key")
    if s.frozen and s.freeze_layers:
        raise InputError(where, "sets both frozen and freeze_layers", "keep one of them")
    if s.draw_seed is not None and s.per_class is None:
        raise InputError(
            f"{where}.draw_seed",
            "draws the few-shot documents, but per_class is not set",
            "set per_class, or drop draw_seed",
        )
    for m in s.methods or ():
        if m not in methods:
            raise InputError(
                f"{where}.methods", f"{m!r} is not a key of methods{did_you_mean(m, methods)}", "name a method"
            )
    return FinetuneEntry(name, replace(s, validation=s.train, test=s.train), kind=kind)
