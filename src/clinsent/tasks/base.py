"""What an evaluation task is: the keys of its eval-set entry, how it reads its files, which
sentences it embeds, and how it scores exported embeddings.

A task module defines a settings dataclass (the keys of ``eval_sets.<name>`` besides ``task``
and ``curve``) and a :class:`Task` subclass, generic over it, registered with
``@TASKS.register("name", settings=Settings)``.
``headline`` is the metric of tables, curves and step selection; ``metrics`` are the metrics
written to ``summary.csv``. The embed and evaluate scripts and the trainer only call these.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, Literal, TypeVar

import numpy as np

from clinsent.evaluation.bootstrap import Items
from clinsent.registry import Registry


@dataclass(frozen=True)
class PairTargets:
    """A task's pairs as fine-tuning rows: targets in [0, 1] (similarity: gold / scale; binary:
    0 or 1), and the record of which rows of its file they are (1-based)."""

    texts1: list[str]
    texts2: list[str]
    targets: np.ndarray
    kind: Literal["similarity", "binary"]
    rows: list[int]


S = TypeVar("S", covariant=True)  # the task's settings dataclass


class Task(abc.ABC, Generic[S]):
    """One evaluation task, generic over its settings (``class Sts(Task[StsSettings])``)."""

    name: ClassVar[str] = ""
    settings_class: ClassVar[type] = object
    headline: str = ""  # a class default; a task may set it per eval set (e.g. probe's `headline` key)
    metrics: tuple[str, ...] = ()  # a class default; a task may set it per eval set (e.g. retrieval's recall@k)
    curve_keys: ClassVar[tuple[str, ...] | None] = None  # the keys the headline depends on (None: all)
    pair_training: ClassVar[bool] = False  # training_pairs, pair_parts and score_pairs are implemented
    doc_training: ClassVar[bool] = False  # examples() is implemented: documents fine-tuned with a classifier head
    token_training: ClassVar[bool] = False  # a token task: fine-tuned with a token-classification head
    zero_shot: ClassVar[bool] = True  # scored from sentence embeddings (false: by finetune entries only)
    # metrics a paired difference between two runs means nothing for: p-values, values fitted on
    # the data (a threshold, a regularisation strength, a number of clusters) and counts
    not_differenced: tuple[str, ...] = ()  # a class default; a task may set it per eval set (probe)

    def __init__(self, set_name: str, settings: S) -> None:
        self.set_name = set_name
        self.settings: S = settings
        self._data: Any = None

    @classmethod
    def from_data(cls, set_name: str, data: Any, settings: Any = None) -> Task[Any]:
        """A task over data already in memory (tests, benchmarks); default settings unless given."""
        task = cls(set_name, settings if settings is not None else cls.settings_class())
        task._data = data
        return task

    @abc.abstractmethod
    def files(self) -> list[str]:
        """The input files of this eval set (declared as rule inputs)."""

    @abc.abstractmethod
    def read(self) -> Any:
        """Read and check the files (bad input: an InputError naming file and row)."""

    def check_header(self) -> None:
        """Check the header lines of this eval set's files (only those; no row is read), so a
        missing column stops the dry run instead of the job. Called by the plan for files that
        exist and that no job writes; an InputError names the key and the fix."""

    @property
    def data(self) -> Any:
        if self._data is None:
            self._data = self.read()
        return self._data

    @abc.abstractmethod
    def texts(self) -> list[str]:
        """Every distinct text to embed, in a fixed order."""

    @abc.abstractmethod
    def score(
        self, texts: list[str], vectors: np.ndarray, context: Mapping[str, Any] | None = None
    ) -> dict[str, float]:
        """Metrics from embeddings of ``texts`` (at least ``metrics``)."""

    def items(self, texts: list[str], vectors: np.ndarray) -> Items | None:
        """The scored items and a statistic recomputing the score metrics on a resample of them,
        for their bootstrap intervals (:mod:`clinsent.evaluation.bootstrap`); None: no intervals."""
        return None

    def score_and_items(self, texts: list[str], vectors: np.ndarray) -> tuple[dict[str, float], Items | None]:
        """:meth:`score` and :meth:`items` together (what the evaluate job calls): a task that fits
        something (a probe's classifier) fits it once for both."""
        return self.score(texts, vectors), self.items(texts, vectors)

    def statistics(self) -> dict[str, Any]:
        """The set's size for the data-statistics tables (the augmentation paper's Table 3):
        task, unit, counts per split, the split used and the headline metric."""
        return {
            "task": self.name,
            "unit": "items",
            "splits": {"all": len(self.texts())},
            "used": "all",
            "metric": self.headline,
        }

    def curve_score(self, texts: list[str], vectors: np.ndarray) -> float:
        """The headline metric, as the trainer logs it every few steps."""
        return float(self.score(texts, vectors)[self.headline])

    def curve_score_and_items(self, texts: list[str], vectors: np.ndarray) -> tuple[float, Items | None]:
        """:meth:`curve_score` and the items of its band (the trainer's curve): one fit for both."""
        metrics, items = self.score_and_items(texts, vectors)
        return float(metrics[self.headline]), items

    def training_pairs(self) -> PairTargets:
        """The eval set's pairs as fine-tuning rows (the fine-tuned setting; ``pair_training``
        says whether the task has them: not a probe, not retrieval)."""
        raise NotImplementedError(f"task {self.name} has no training pairs")

    def pair_parts(self) -> list[tuple[list[str], list[str]]]:
        """The pairs a cross-encoder scores for :meth:`score_pairs` (e.g. RQE: test, then dev)."""
        raise NotImplementedError(f"task {self.name} scores no pairs")

    def score_pairs(self, scores: list[np.ndarray]) -> dict[str, float]:
        """Metrics from a pair scorer's outputs on :meth:`pair_parts` (cross-encoders)."""
        raise NotImplementedError(f"task {self.name} scores no pairs")

    def pair_items(self, scores: list[np.ndarray]) -> Items | None:
        """The items of :meth:`score_pairs` (a pair scorer's outputs on :meth:`pair_parts`), for
        the intervals of a cross-encoder's results; None: no intervals."""
        return None

    def lookup(self, texts: list[str], vectors: np.ndarray, wanted: list[str]) -> np.ndarray:
        """The rows of ``vectors`` for ``wanted`` texts (looked up by text)."""
        from clinsent.errors import InputError

        index = {t: i for i, t in enumerate(texts)}
        missing = sum(1 for t in wanted if t not in index)
        if missing:
            raise InputError(
                f"embeddings of {self.set_name}",
                f"{missing} text(s) have no embedding",
                "re-run the embed rule for this eval set",
            )
        return vectors[[index[t] for t in wanted]]


TASKS: Registry[type[Task]] = Registry(
    "evaluation task", "eval_sets.<name>.task", settings=True, package="clinsent.tasks"
)
