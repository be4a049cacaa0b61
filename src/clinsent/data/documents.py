"""Training data as whole documents: a partition of the ``documents`` rule's output
(:mod:`clinsent.corpus.documents`) as rows ``text`` (+ ``category``, ``n_words``), taken in a
seeded order reshuffled every epoch (:class:`~clinsent.data.rows.RowsData`).

Checked when a train job reads them, before any training step: documents shorter than the
method's minimum (DeCLUTR's 2 x anchors x max_span words) are skipped and counted in the log;
a method that needs categories gets a clear error when the notes have none (a format without
a category column) or when a category has a single document (it cannot be learnt, and a
typo in a category is the likelier cause).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from clinsent.data import DataNeed, TrainingData
from clinsent.data.rows import RowsData
from clinsent.errors import InputError
from clinsent.paths import DOCUMENTS, Tree

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class DocumentRows(DataNeed):
    partition: str  # pretrain or downstream (clinsent.corpus.documents.PARTITIONS)
    batch_size: int
    min_words: int = 0
    categories: bool = False  # the method predicts the note category

    def inputs(self, paths: Mapping[str, str], seed: int) -> dict[str, str]:
        return {"documents": Tree(paths["results"]).file(DOCUMENTS, partition=self.partition)}

    def load(self, inputs: Mapping[str, Any], seed: int) -> TrainingData:
        path = inputs["documents"]
        df = pd.read_parquet(path, columns=["row_id", "category", "n_words", "text"])
        about = {"description": f"whole notes (the documents' {self.partition} partition)", "source": "notes"}
        return DocumentData(self.select(df, str(path)), self.batch_size, seed, about)

    def select(self, df: pd.DataFrame, where: str) -> pd.DataFrame:
        """The documents trained on (the checks above); ``where`` names the file in errors."""
        short = df["n_words"] < self.min_words
        if short.any():
            log.info(
                "%d of %d documents are shorter than %d words: skipped", int(short.sum()), len(df), self.min_words
            )
        df = df.loc[~short].reset_index(drop=True)
        if df.empty:
            raise InputError(
                where,
                f"no document has at least {self.min_words} words",
                "lower max_span or num_anchors (a document needs 2 x num_anchors x max_span words), "
                "or check notes.categories",
            )
        if self.categories:
            cats = df["category"].fillna("").astype(str).str.strip()
            if (cats == "").any():
                raise InputError(
                    where,
                    f"{int((cats == '').sum())} of {len(df)} documents have no category",
                    "note-category pre-training needs NOTEEVENTS' CATEGORY (format noteevents_csv) or "
                    "notes.category_column (format parquet)",
                )
            counts = cats.value_counts()
            once = sorted(counts[counts < 2].index)
            if once:
                raise InputError(
                    where,
                    f"categor{'y' if len(once) == 1 else 'ies'} {once} occur in a single document",
                    "drop them with notes.categories, or add documents",
                )
            df = df.assign(category=cats)
        return df


class DocumentData(RowsData):
    """Documents in a seeded order; ``classes``: their sorted categories (the head's outputs)."""

    unit = "notes"

    def __init__(self, rows: pd.DataFrame, batch_size: int, seed: int, about: dict[str, str] | None = None) -> None:
        super().__init__(rows, batch_size, seed, about)
        self.classes = sorted(rows["category"].fillna("").astype(str).unique())

    def identity(self) -> pd.DataFrame:
        return self.rows[["row_id", "n_words"]].assign(_order_seed=self.seed, _batch=self.batch_size)
