"""The training-data contract: what a method declares it trains on, and how a train job reads it.

A method's :meth:`~clinsent.methods.base.Method.data_need` returns a :class:`DataNeed`: it
names the files a train job reads (so the workflow asks the method instead of testing its
name) and turns them into a :class:`TrainingData`, which hands the trainer one batch of rows
(a DataFrame) per step. Kinds:

- :class:`~clinsent.data.plan.SentencePlan`: a batch plan over the sentence sets (and the
  linked entities when the method needs them); columns ``sent_id``, ``ent_idx``, ``text``
  (+ ``start``, ``end``, ``definition``);
- :class:`~clinsent.data.rows.TrainingRows`: a parquet of training rows with named text
  columns (e.g. ``anchor``, ``positive``, ``negative``), optional ``label`` and extras, written
  by the ``training_rows`` rule from a ``training_data.<name>`` entry through a reader of
  :data:`clinsent.data.readers.READERS`.

A new data source is one reader (or one new ``DataNeed``) plus one rule; the trainer does not change.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import pandas as pd

from clinsent.data.tokens import TokenFile

if TYPE_CHECKING:
    from clinsent.data.positions import StepRows


class TrainingData(abc.ABC):
    """One job's training batches, fixed in advance (a resumed job sees the same ones)."""

    @abc.abstractmethod
    def batch(self, step: int) -> pd.DataFrame:
        """The rows of training step ``step`` (1-based)."""

    @abc.abstractmethod
    def identity(self) -> pd.DataFrame:
        """What fixes the batches (hashed into the checkpoint fingerprint)."""

    def check(self, steps: int) -> None:
        """Raise when ``steps`` steps cannot be served."""

    def has_tokens(self) -> bool:
        """Whether the steps come as token positions too (:meth:`positions`: the ``tokens`` rule's
        files were read), so a loss gathers its batches instead of tokenizing them."""
        return False

    def positions(self, step: int) -> StepRows:
        """The rows of step ``step`` as positions in the token tables (:mod:`clinsent.data.positions`)."""
        raise NotImplementedError(f"{type(self).__name__} has no token tables")

    def summary(self) -> dict[str, Any]:
        """What the model card says of this data (:mod:`clinsent.release.card`): ``description``
        (its kind and source: names from the config, never a path or a row), ``rows`` (distinct
        rows trained on), ``unit``, and ``source`` (``notes`` or the config key of the source,
        where its data-use class is looked up)."""
        return {"description": "training rows", "rows": len(self.identity()), "unit": "rows", "source": ""}


class DataNeed(abc.ABC):
    """The training data a method declares."""

    @abc.abstractmethod
    def inputs(self, paths: Mapping[str, str], seed: int) -> dict[str, str]:
        """Named input files of a train job; ``paths`` holds the workflow's locations
        (``results``, ``sets``, ``linked``) and the job's ``tokenizer`` (its base model's key)."""

    def token_files(self, paths: Mapping[str, str]) -> dict[str, TokenFile]:
        """The token files (:mod:`clinsent.data.tokens`) a train job reads, by input name (among
        :meth:`inputs`); none: its batches are tokenized in the step."""
        return {}

    @abc.abstractmethod
    def load(self, inputs: Mapping[str, Any], seed: int) -> TrainingData:
        """Read those files into batches."""

    def note_entities(self) -> bool:
        """Whether this data needs the notes' entities (NER, the ontology's definitions, S_ent or
        S_none): without any such need in a run, the corpus stage stops at the split sentences."""
        return False
