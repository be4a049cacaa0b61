"""Supervised SimCSE (Gao, Yao, Chen 2021, EMNLP, section 4, eq. 5): NLI entailment pairs as
positives, contradiction hypotheses as hard negatives, InfoNCE over the in-batch positives and
all hard negatives, tau 0.05 (:func:`clinsent.losses.supervised.supervised_info_nce`; the loss
module is :class:`clinsent.losses.supervised.SupSimCSELoss`).

Trains on training rows (``train_data``: a key of the config's ``training_data``, read by an
NLI reader into ``anchor``, ``positive``, ``negative``). The 3N sentences of a batch go
through the encoder in one pass, as SimCSE's ``cl_forward`` does. ``hard_negatives: false``
drops the negatives: the multiple-negatives ranking loss. With ``pooling: cls`` the MLP head
trains and is not saved, as for the unsupervised objectives.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar

from clinsent.config.declare import knob
from clinsent.config.sections import RunConfig
from clinsent.data import DataNeed
from clinsent.data.rows import TrainingRows
from clinsent.errors import InputError
from clinsent.methods.base import METHODS, Method
from clinsent.methods.knobs import Pooling, TrainedSettings
from clinsent.registry import did_you_mean


@dataclass(frozen=True)
class SupSimCSESettings(TrainedSettings):
    train_data: str = knob("", "a key of training_data (NLI triplets: anchor, positive, negative)")
    pooling: Pooling = knob("cls", "as for every method; SimCSE's supervised setting uses cls with the MLP")
    temperature: float = knob(0.05, "tau", exclusiveMinimum=0)
    hard_negatives: bool = knob(True, "use the contradiction hypotheses as hard negatives (false: MNR loss)")
    hard_negative_weight: float = knob(0.0, "log-weight added to each anchor's own hard negative (SimCSE: 0)")


SupS = TypeVar("SupS", bound=SupSimCSESettings)  # MNR's settings extend these


@METHODS.register("sup_simcse", settings=SupSimCSESettings)
class SupervisedSimCSE(Method[SupS]):
    tokenized = True  # its batches gathered from the token files
    loss_class = "clinsent.losses.supervised:SupSimCSELoss"  # imported by build_loss alone
    reference = "supervised SimCSE (Gao, Yao, Chen 2021, EMNLP, section 4, eq. 5)"
    in_batch_negatives = True
    steps_in_chunks = True

    def data_need(self) -> DataNeed | None:
        s = self.settings
        columns = ("anchor", "positive", "negative") if s.hard_negatives else ("anchor", "positive")
        return TrainingRows(s.train_data, columns, s.batch_size, max_length=s.max_length)

    def check(self, where: str, config: RunConfig) -> None:
        s = self.settings
        sources = list(config.training_data)
        if s.train_data not in sources:
            raise InputError(
                f"{where}.train_data",
                f"{s.train_data!r} is not a key of training_data {sources}{did_you_mean(s.train_data, sources)}",
                "name a training_data entry (e.g. NLI triplets from format nli_jsonl)",
            )
