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

import numpy as np
import pandas as pd

from clinsent.data import DataNeed, TrainingData
from clinsent.data.positions import StepRows
from clinsent.data.rows import RowsData
from clinsent.data.tokens import Tables, TokenFile
from clinsent.errors import InputError
from clinsent.paths import DOCUMENTS, Tree

log = logging.getLogger(__name__)
SOURCE_ROW = "_source_row"  # a document's row in the documents file (its key in the token file)


@dataclass(frozen=True)
class DocumentRows(DataNeed):
    partition: str  # pretrain or downstream (clinsent.corpus.documents.PARTITIONS)
    batch_size: int
    min_words: int = 0
    categories: bool = False  # the method predicts the note category
    max_length: int = 0  # the token file's length (clinsent.data.tokens); 0: tokenized in the step

    def inputs(self, paths: Mapping[str, str], seed: int) -> dict[str, str]:
        out = {"documents": Tree(paths["results"]).file(DOCUMENTS, partition=self.partition)}
        return out | {name: f.path(paths["results"]) for name, f in self.token_files(paths).items()}

    def token_files(self, paths: Mapping[str, str]) -> dict[str, TokenFile]:
        if not self.max_length or "tokenizer" not in paths:  # no tokenizer given: tokenized in the step
            return {}
        return {"tokens": TokenFile(f"documents-{self.partition}", paths["tokenizer"], self.max_length)}

    def load(self, inputs: Mapping[str, Any], seed: int) -> TrainingData:
        from clinsent.data.tokens import read_tables

        path = inputs["documents"]
        df = pd.read_parquet(path, columns=["row_id", "category", "n_words", "text"])
        df[SOURCE_ROW] = np.arange(len(df))  # the row's key in the token file
        about = {"description": f"whole notes (the documents' {self.partition} partition)", "source": "notes"}
        tokens = read_tables(inputs["tokens"]) if "tokens" in inputs else None
        return DocumentData(self.select(df, str(path)), self.batch_size, seed, about, tokens)

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

    def __init__(
        self,
        rows: pd.DataFrame,
        batch_size: int,
        seed: int,
        about: dict[str, str] | None = None,
        tokens: Tables | None = None,
    ) -> None:
        self.classes = sorted(rows["category"].fillna("").astype(str).unique())
        index = {c: i for i, c in enumerate(self.classes)}
        self._codes = np.array([index[c] for c in rows["category"].fillna("").astype(str)], dtype=np.int64)
        super().__init__(rows, batch_size, seed, about, tokens, ("text",) if tokens is not None else ())

    def token_keys(self) -> np.ndarray:
        if SOURCE_ROW in self.rows:
            return self.rows[SOURCE_ROW].to_numpy()
        return np.arange(len(self.rows))

    def positions(self, step: int) -> StepRows:
        rows = super().positions(step)
        codes = self._codes[np.asarray(self.indices(step), dtype=np.int64)]
        return StepRows(rows.n, rows.tables, rows.index, {"category": codes}, frame=rows.frame)

    def identity(self) -> pd.DataFrame:
        return self.rows[["row_id", "n_words"]].assign(_order_seed=self.seed, _batch=self.batch_size)
