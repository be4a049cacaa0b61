"""What a method is: its settings (with their defaults), the training data it needs, and the
loss module that owns its extra modules.

A method module defines a settings dataclass (fields made with :func:`clinsent.config.declare.knob`)
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
import importlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar, cast

from clinsent.config.sections import RunConfig
from clinsent.data import DataNeed
from clinsent.data.plan import SentencePlan
from clinsent.methods.knobs import MethodSettings, Pooling, SentencePlanSettings, TrainedSettings
from clinsent.methods.loss_knobs import loss_knobs
from clinsent.methods.memory import check_memory
from clinsent.registry import Registry

if TYPE_CHECKING:  # the loss side needs torch; the settings side never imports it
    from clinsent.losses.base import MethodLoss
    from clinsent.models.encoder import Encoder

S = TypeVar("S", bound=MethodSettings, covariant=True)


class Method(abc.ABC, Generic[S]):
    """One objective, generic over its settings (``class SimCSE(Method[SimCSESettings])``):
    ``settings_class`` holds its knobs and their defaults, ``self.settings`` their values."""

    name: ClassVar[str] = ""
    loss_class: ClassVar[str] = ""  # "module:Class" of its loss (clinsent.losses), imported by build_loss alone
    settings_class: ClassVar[type[MethodSettings]] = MethodSettings
    # the paper and its equation or section, as the model card cites it (clinsent.release.card)
    reference: ClassVar[str] = ""
    # whether the loss contrasts each row with the other rows of its batch (in-batch negatives):
    # such a loss takes ``mini_batch`` for large batches; one without takes ``accumulate``
    in_batch_negatives: ClassVar[bool] = False
    # whether the loss is written in halves (``embed``/``score``) and can cut a batch (``chunk``):
    # only then do mini_batch and accumulate apply (a loss with only ``forward`` steps in one pass)
    steps_in_chunks: ClassVar[bool] = False
    # whether its loss makes each step's batch from token files (clinsent.data.tokens: its data
    # need declares them, a ``tokens`` job writes them); else the step tokenizes its rows
    tokenized: ClassVar[bool] = False

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
            max_length=s.max_length if self.tokenized else 0,
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

    def check(self, where: str, config: RunConfig) -> None:
        """Raise an InputError for an invalid combination of knobs (run when the config is read)."""

    def check_memory(self, where: str) -> None:
        """The memory and speed knobs against each other and against the objective's loss
        (:func:`clinsent.methods.memory.check_memory`; run for every method when the config is read)."""
        check_memory(self.settings, self.name, self.steps_in_chunks, self.in_batch_negatives, where)

    def build_loss(self, encoder: Encoder) -> MethodLoss:
        """The method's loss module, built from its settings: the class :attr:`loss_class` names,
        given each knob it takes (:meth:`loss_knobs`). The loss module is imported here, by name,
        so reading settings never imports torch; the loss reads its knobs' defaults from the
        method's settings class (written once, in the knob)."""
        if not self.loss_class:
            raise NotImplementedError(f"{type(self).__name__} trains nothing")
        module, _, name = self.loss_class.partition(":")
        loss_class = getattr(importlib.import_module(module), name)
        return cast("MethodLoss", loss_class(encoder, **self.loss_knobs(loss_class)))

    def loss_knobs(self, loss_class: type) -> dict[str, Any]:
        """The settings values of the knobs ``loss_class`` takes (:func:`clinsent.methods.loss_knobs.loss_knobs`)."""
        return loss_knobs(self.settings, loss_class)


def rows_source(settings: MethodSettings) -> str:
    """The training rows a method's ``epochs`` count passes over (NLI triplets: ``train_data``;
    documents: ``documents``), or "" for the sentence sets (epochs resolved from the corpus size)."""
    return str(getattr(settings, "train_data", "") or getattr(settings, "documents", ""))


METHODS: Registry[type[Method[Any]]] = Registry(
    "objective", "methods.<name>.objective", settings=True, package="clinsent.methods"
)
