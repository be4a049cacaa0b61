"""What a method is: its settings (with their defaults), the training data it needs, and the
loss module that owns its extra modules.

A method module defines a settings dataclass (fields made with :func:`clinsent.settings.knob`)
and a :class:`Method` subclass registered with ``@METHODS.register("objective_name")``; its loss,
a :class:`clinsent.losses.base.MethodLoss` (an ``nn.Module``, after sentence-transformers' losses:
it holds what it needs, prepares a batch on the CPU and returns its loss as named parts), lives
in the method's module under :mod:`clinsent.losses` and is imported by ``build_loss`` alone. So
the settings, checks and data needs import neither torch nor transformers: reading a config (a
dry run, every cluster job's re-parse, the jobs that load no model) stays light. The trainer
sums the loss parts, logs each as a curve column ``loss_<part>``, and otherwise knows nothing of
the method.
"""

from __future__ import annotations

import abc
import dataclasses
import inspect
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Literal, TypeVar, cast

from clinsent.data import DataNeed
from clinsent.data.plan import SentencePlan
from clinsent.errors import InputError
from clinsent.precision import ALIASES as PRECISION_ALIASES
from clinsent.precision import PRECISION_DOC, Precision
from clinsent.registry import Registry
from clinsent.settings import knob
from clinsent.speed import Auto

if TYPE_CHECKING:  # the loss side needs torch; the settings side never imports it
    from clinsent.losses.base import MethodLoss
    from clinsent.models.encoder import Encoder

Pooling = Literal["cls", "cls_mlp", "cls_before_pooler", "mean", "first_last", "model"]
TRAINED_HEAD_POOLINGS = ("cls_mlp",)  # poolings whose MLP is part of the model: only a trained objective has one


@dataclass(frozen=True)
class MethodSettings:
    """Knobs every method has (the untrained baseline too): how sentences become vectors."""

    pooling: Pooling = knob(
        "first_last",
        "cls (SimCSE-family objectives train it through an MLP that is not saved), "
        "cls_mlp (that MLP trained and kept at test: SimCSE's supervised recipe), "
        "cls_before_pooler, mean, first_last (mean of layer first_layer and the last), "
        "model (the base model's own sentence-transformers pooling, cls or mean: "
        "clinsent.models.st_config)",
    )
    first_layer: int = knob(1, "first layer of first_last; 0 is the embedding layer (SimCSE's early code)", minimum=0)
    max_length: int = knob(128, "tokens per sentence", minimum=8)
    eval_batch_size: int = knob(64, "batch size when the trainer embeds the curve sets", minimum=1)


@dataclass(frozen=True)
class TrainedSettings(MethodSettings):
    """Knobs of every trained method: optimisation, schedule, step selection and checkpoints."""

    steps: int = knob(2000, "training steps", minimum=0)
    epochs: float | None = knob(
        None,
        "instead of steps: passes over a sentence corpus (steps = ceil(epochs x "
        "corpus size / batch_size), derived when the config is read) or over training "
        "rows (epochs x full batches, derived when the train job reads them)",
        exclusiveMinimum=0,
    )
    batch_size: int = knob(32, "rows (sentences, pairs, triplets) per batch", minimum=2)
    learning_rate: float = knob(3e-5, "peak learning rate; linear decay to 0", exclusiveMinimum=0)
    optimizer: Literal["adamw", "rmsprop"] = knob("adamw", "adamw (weight decay 0; fused) or rmsprop")
    warmup_ratio: float = knob(0.0, "share of the steps with a linear warm-up", minimum=0, maximum=1)
    grad_clip: float = knob(
        1.0, "clip the gradient norm to this (SimCSE's HF Trainer: 1.0); 0 switches it off", minimum=0
    )
    eval_every: int = knob(25, "evaluate the curve sets every n steps (and at the last)", minimum=1)
    checkpoint_every: int = knob(250, "checkpoint every n steps (resumed after a kill); 0: none", minimum=0)
    dropout: bool = knob(True, "train with dropout (false: ConSERT's augmentations, the original CT)")
    compile: bool | Auto = knob(
        "auto",
        "torch.compile the whole step's forward (encoder, pooling, loss, the loss's own "
        "encoders) as one graph, token lengths padded to multiples of 16 (few shapes); "
        "steps in chunks (mini_batch, accumulate) stay eager. auto: on where a CUDA measurement "
        "showed it faster (clinsent.speed), off on the CPU; a compile_mode turns it on",
    )
    compile_mode: Literal["default", "reduce-overhead", "max-autotune"] = knob(
        "default",
        "torch.compile's mode with compile on: reduce-overhead replays each shape's step as a CUDA graph "
        "on CUDA (no effect on the CPU)",
    )
    precision: Precision = knob("auto", PRECISION_DOC, aliases=PRECISION_ALIASES)
    mini_batch: int | None = knob(
        None,
        "memory: embed the batch in chunks of this many rows, without gradients, "
        "compute the loss over all of them, then re-run each chunk with gradients "
        "and the same dropout masks (GradCache): every in-batch negative kept, the "
        "full batch's gradients (equal with deterministic views, equal in "
        "distribution with dropout), the memory of one chunk; objectives with "
        "in-batch negatives; null or >= batch_size: one pass",
        minimum=1,
    )
    accumulate: int = knob(
        1,
        "accumulate the gradients of this many micro-batches into one step (batch_size rows in "
        "all, the full batch's gradient); objectives without in-batch negatives (mlm, "
        "note_category; the others: mini_batch)",
        minimum=1,
    )
    gradient_checkpointing: bool = knob(
        False,
        "memory: recompute each encoder layer's activations in the backward "
        "pass (transformers' own; dropout replayed, so the same gradients) "
        "instead of storing them: about a third more compute",
    )
    unpad: bool | Auto = knob(
        "auto",
        "speed: every encoder layer's projections, feed-forward and layer norms run on the "
        "batch's real tokens only, attention on the padded layout with its mask and dropout "
        "(BERT-architecture encoders; clinsent.models.unpadded). Eval-mode embeddings equal the "
        "padded forward's within 1e-5; dropout masks fall on another layout, so curves differ "
        "by dropout noise. auto: on where a CUDA measurement showed it faster (clinsent.speed), off "
        "on the CPU and with gradient_checkpointing; varlen_attention turns it on",
    )
    varlen_attention: bool = knob(
        False,
        "with unpad, on CUDA: torch's variable-length flash attention over the "
        "packed tokens (no padding anywhere). A departure: that kernel has no "
        "attention-probability dropout, part of SimCSE's noise (fidelity page); on "
        "the CPU attention stays padded, with dropout",
    )


@dataclass(frozen=True)
class SentencePlanSettings:
    """Knobs of methods trained on the sentence sets through a batch plan."""

    corpus: Literal["s_all", "s_ent", "s_none"] = knob("s_all", "training sentences: S_all, S_ent or S_none")
    none_share: float = knob(
        0.0,
        "with s_ent: exactly round(share x batch) S_none sentences per batch; 1: S_none alone",
        minimum=0,
        maximum=1,
    )
    duplicates: Literal["naive", "remove", "replace"] = knob(
        "naive", "duplicate entities in a batch: naive, remove (the batch shrinks) or replace"
    )
    sentences: str = knob(
        "notes",
        "the sentence source: notes (the notes pipeline's sets) or a key of "
        "sentence_corpora (plain sentences: corpus s_all only)",
    )
    fraction: float = knob(
        1.0,
        "train on this share of the corpus (a fixed, nested subset), same number of steps "
        "(the augmentation paper's Figure 1)",
        exclusiveMinimum=0,
        maximum=1,
    )


S = TypeVar("S", bound=MethodSettings, covariant=True)


class Method(abc.ABC, Generic[S]):
    """One objective, generic over its settings (``class SimCSE(Method[SimCSESettings])``):
    ``settings_class`` holds its knobs and their defaults, ``self.settings`` their values."""

    name: ClassVar[str] = ""
    settings_class: ClassVar[type[MethodSettings]] = MethodSettings
    # the paper and its equation or section, as the model card cites it (clinsent.model_card)
    reference: ClassVar[str] = ""
    # whether the loss contrasts each row with the other rows of its batch (in-batch negatives):
    # such a loss takes ``mini_batch`` for large batches; one without takes ``accumulate``
    in_batch_negatives: ClassVar[bool] = False
    # whether the loss is written in halves (``embed``/``score``) and can cut a batch (``chunk``):
    # only then do mini_batch and accumulate apply (a loss with only ``forward`` steps in one pass)
    steps_in_chunks: ClassVar[bool] = False

    def __init__(self, settings: S) -> None:
        self.settings: S = settings

    @property
    def trains(self) -> bool:
        return isinstance(self.settings, TrainedSettings) and self.settings.steps > 0

    def data_need(self) -> DataNeed | None:
        """The training data a train job reads (None: nothing is trained)."""
        s = self.settings
        if not isinstance(s, TrainedSettings) or not isinstance(s, SentencePlanSettings):
            return None
        return SentencePlan(
            s.corpus,
            s.duplicates,
            float(s.none_share),
            s.batch_size,
            s.steps,
            source=s.sentences,
            fraction=float(s.fraction),
        )

    def extra_models(self) -> list[str]:
        """Models the loss loads besides the base model (base_models forms, or a key of methods:
        that run's trained model, see :meth:`with_run_models`), so the workflow can declare local
        folders and trained runs among them as inputs."""
        return []

    def with_run_models(self, paths: Mapping[str, str]) -> Method[S]:
        """This method with each settings value that names a run (a key of ``paths``: a method of
        the config) replaced by that run's saved model folder (the train job does this)."""
        changes: dict[str, Any] = {
            f.name: paths[v]
            for f in dataclasses.fields(self.settings)
            if isinstance(v := getattr(self.settings, f.name), str) and v in paths
        }
        return type(self)(dataclasses.replace(self.settings, **changes)) if changes else self

    def with_own_pooling(self, folder: str) -> Method[S]:
        """This method with ``pooling: model`` replaced by the pooling the base model's folder
        configures (:func:`clinsent.models.st_config.own_pooling`; the train job does this)."""
        if self.settings.pooling != "model":
            return self
        from clinsent.models.st_config import own_pooling

        own = cast(Pooling, own_pooling(folder, "methods.<name>.pooling: model"))
        return type(self)(dataclasses.replace(self.settings, pooling=own))

    def curve_statistics(self) -> list[str]:
        """The statistics the loss logs at each eval step (curve columns ``stat_<name>``, see
        :meth:`clinsent.losses.base.MethodLoss.statistics`): named here so a report entry that
        plots one is checked when the config is read."""
        return []

    def example_view(self, text: str, seed: int, mask_token: str = "[MASK]") -> str | None:
        """The text of the positive view this method makes of ``text`` (the augmentation paper's
        Table 2), or None when the view is the same text (dropout and embedding-level views)."""
        return None

    def check(self, where: str, config: Mapping[str, Any]) -> None:
        """Raise an InputError for an invalid combination of knobs (run when the config is read)."""

    def check_memory(self, where: str) -> None:
        """``accumulate`` only where no loss term compares rows across the batch, ``mini_batch``
        only where one does (run for every method when the config is read); ``unpad`` without
        gradient checkpointing (its forward is not transformers' checkpointed one),
        ``varlen_attention`` not with ``unpad: false``, ``compile_mode`` not with ``compile: false``
        (with ``auto`` they turn the knob on: :mod:`clinsent.speed`)."""
        s = self.settings
        if not isinstance(s, TrainedSettings):
            return
        if s.unpad is True and s.gradient_checkpointing:
            raise InputError(
                f"{where}.unpad",
                "the unpadded forward does not checkpoint its layers",
                "use one of unpad and gradient_checkpointing (mini_batch also bounds memory)",
            )
        if s.varlen_attention and (s.unpad is False or s.gradient_checkpointing):
            raise InputError(
                f"{where}.varlen_attention",
                "variable-length attention runs on the unpadded forward"
                + (", which does not checkpoint its layers" if s.gradient_checkpointing else ", and unpad is false"),
                "remove varlen_attention, or set unpad to auto or true (without gradient_checkpointing)",
            )
        if s.compile_mode != "default" and s.compile is False:
            raise InputError(
                f"{where}.compile_mode",
                "torch.compile's mode applies to the compiled step, and compile is false",
                "set compile to auto or true, or remove compile_mode",
            )
        if not self.steps_in_chunks and (s.accumulate > 1 or s.mini_batch is not None):
            key = "accumulate" if s.accumulate > 1 else "mini_batch"
            raise InputError(
                f"{where}.{key}",
                f"objective {self.name}'s loss steps a batch in one pass (it has no "
                "embed/score halves and no chunk, see clinsent.losses.base)",
                f"remove {key}, or give the loss those methods and set steps_in_chunks = True on {self.name}",
            )
        if self.in_batch_negatives and s.accumulate > 1:
            raise InputError(
                f"{where}.accumulate",
                f"objective {self.name} contrasts each row with the other rows "
                f"of its batch: {s.accumulate} accumulated micro-batches would each have 1/{s.accumulate} "
                "of the negatives",
                f"use mini_batch: {max(1, s.batch_size // s.accumulate)} instead (every "
                "negative of the batch and its gradients, the memory of that many rows)",
            )
        if not self.in_batch_negatives and s.mini_batch is not None:
            raise InputError(
                f"{where}.mini_batch",
                f"objective {self.name} has no in-batch negatives, so chunks need no second pass",
                f"use accumulate: {max(1, s.batch_size // s.mini_batch)} instead "
                "(micro-batches, one optimiser step, the full batch's gradient)",
            )
        if s.accumulate > s.batch_size:
            raise InputError(
                f"{where}.accumulate",
                f"{s.accumulate} micro-batches of a batch of {s.batch_size}",
                "give accumulate at most batch_size",
            )

    def build_loss(self, encoder: Encoder) -> MethodLoss:
        """The method's loss module, built from its settings: ``SimCSELoss(encoder,
        **self.loss_knobs(SimCSELoss))``. The loss module is imported here, so reading settings
        never imports torch."""
        raise NotImplementedError(f"{type(self).__name__} trains nothing")

    def loss_knobs(self, loss_class: type) -> dict[str, Any]:
        """The settings values of the knobs ``loss_class`` takes: each keyword-only argument of its
        ``__init__`` (and of the loss classes it extends) that is a settings field, by name."""
        fields = {f.name for f in dataclasses.fields(self.settings)}
        return {name: getattr(self.settings, name) for name in loss_arguments(loss_class) if name in fields}


def loss_arguments(loss_class: type) -> dict[str, Any]:
    """Name -> default of each keyword-only argument of ``loss_class.__init__`` and of the
    ``__init__`` of each class it extends (a subclass passes its parent's on as ``**kwargs``)."""
    out: dict[str, Any] = {}
    for cls in loss_class.__mro__:
        init = vars(cls).get("__init__")
        if init is None:
            continue
        for p in inspect.signature(init).parameters.values():
            if p.kind is p.KEYWORD_ONLY:
                out.setdefault(p.name, p.default)
    return out


def rows_source(settings: MethodSettings) -> str:
    """The training rows a method's ``epochs`` count passes over (NLI triplets: ``train_data``;
    documents: ``documents``), or "" for the sentence sets (epochs resolved from the corpus size)."""
    return str(getattr(settings, "train_data", "") or getattr(settings, "documents", ""))


METHODS: Registry[type[Method[Any]]] = Registry(
    "objective", "methods.<name>.objective", settings=True, package="clinsent.methods"
)
