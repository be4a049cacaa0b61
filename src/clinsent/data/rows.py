"""Training data as rows with named text columns (e.g. anchor / positive / negative).

The ``training_rows`` rule writes ``training_rows/<source>.parquet`` from a
``training_data.<source>`` entry; a train job reads it and takes batches in a seeded order,
reshuffled every epoch (an epoch is ``len(rows) // batch_size`` full batches; a set smaller
than one batch is one batch).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from clinsent.data import DataNeed, TrainingData
from clinsent.data.positions import StepRows
from clinsent.data.tokens import Tables, TokenFile, TokenTable
from clinsent.errors import InputError
from clinsent.paths import TRAINING_ROWS, Tree


@dataclass(frozen=True)
class TrainingRows(DataNeed):
    source: str  # a key of the config's training_data
    columns: tuple[str, ...]  # text columns the method reads
    batch_size: int
    max_length: int = 0  # the token file's length (clinsent.data.tokens); 0: tokenized in the step

    def inputs(self, paths: Mapping[str, str], seed: int) -> dict[str, str]:
        out = {"rows": Tree(paths["results"]).file(TRAINING_ROWS, source=self.source)}
        return out | {name: f.path(paths["results"]) for name, f in self.token_files(paths).items()}

    def token_files(self, paths: Mapping[str, str]) -> dict[str, TokenFile]:
        """The rows' text columns tokenized (every text column of the rows: one file whatever the
        method reads of it)."""
        if not self.max_length or "tokenizer" not in paths:  # no tokenizer given: tokenized in the step
            return {}
        return {"tokens": TokenFile(f"rows-{self.source}", paths["tokenizer"], self.max_length, self.columns)}

    def load(self, inputs: Mapping[str, Any], seed: int) -> TrainingData:
        from clinsent.data.tokens import read_tables

        df = pd.read_parquet(inputs["rows"])
        missing = [c for c in self.columns if c not in df.columns]
        if missing:
            raise InputError(
                inputs["rows"],
                f"training rows of {self.source!r} lack column(s) {missing}; the method needs {list(self.columns)}",
                "give the method training data whose reader writes them",
            )
        about = {
            "description": f"training rows of `training_data.{self.source}` ({', '.join(self.columns)})",
            "source": self.source,
        }
        tokens = read_tables(inputs["tokens"]) if "tokens" in inputs else None
        return RowsData(df, self.batch_size, seed, about, tokens, self.columns)


class RowsData(TrainingData):
    unit = "rows"  # what the model card counts

    def __init__(
        self,
        rows: pd.DataFrame,
        batch_size: int,
        seed: int,
        about: dict[str, str] | None = None,
        tokens: Tables | None = None,
        columns: tuple[str, ...] = (),
    ) -> None:
        if len(rows) == 0:
            raise ValueError("the training rows are empty")
        self.about = about or {"description": "training rows", "source": ""}
        self.rows, self.seed = rows.reset_index(drop=True), seed
        self.batch_size = min(batch_size, len(rows))
        self.per_epoch = len(rows) // self.batch_size
        self._orders: dict[int, np.ndarray] = {}
        self.tables: dict[str, TokenTable] = {}
        self._token_rows = np.arange(len(self.rows))
        if tokens is not None:
            self._bind(tokens, columns or tuple(tokens.columns))

    def _bind(self, tokens: Tables, columns: tuple[str, ...]) -> None:
        """The token tables of ``columns``; ``_token_rows`` each row's row in them (keyed by row number)."""
        missing = [c for c in columns if c not in tokens.columns]
        if missing:
            raise ValueError(f"the token file lacks column(s) {missing}; rerun the tokens rule")
        self.tables = {c: tokens.columns[c] for c in columns}
        self._token_rows = tokens.rows_of(self.token_keys(), "the training rows")

    def token_keys(self) -> np.ndarray:
        """Each row's key in its token file (its row number in the source file)."""
        return np.arange(len(self.rows))

    def has_tokens(self) -> bool:
        return bool(self.tables)

    def positions(self, step: int) -> StepRows:
        at = self._token_rows[np.asarray(self.indices(step), dtype=np.int64)]
        return StepRows(len(at), self.tables, dict.fromkeys(self.tables, at), frame=lambda: self.batch(step))

    def _order(self, epoch: int) -> np.ndarray:
        if epoch not in self._orders:
            self._orders[epoch] = np.random.default_rng([self.seed, epoch]).permutation(len(self.rows))
        return self._orders[epoch]

    def indices(self, step: int) -> Sequence[int]:
        epoch, k = divmod(step - 1, self.per_epoch)
        return self._order(epoch)[k * self.batch_size : (k + 1) * self.batch_size].tolist()

    def batch(self, step: int) -> pd.DataFrame:
        return self.rows.iloc[self.indices(step)].reset_index(drop=True)

    def identity(self) -> pd.DataFrame:
        return self.rows.assign(_order_seed=self.seed, _batch=self.batch_size)

    def summary(self) -> dict[str, Any]:
        return {**self.about, "rows": len(self.rows), "unit": self.unit}
