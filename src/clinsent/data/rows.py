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
from clinsent.errors import InputError
from clinsent.paths import TRAINING_ROWS, Tree


@dataclass(frozen=True)
class TrainingRows(DataNeed):
    source: str  # a key of the config's training_data
    columns: tuple[str, ...]  # text columns the method reads
    batch_size: int

    def inputs(self, paths: Mapping[str, str], seed: int) -> dict[str, str]:
        return {"rows": Tree(paths["results"]).file(TRAINING_ROWS, source=self.source)}

    def load(self, inputs: Mapping[str, Any], seed: int) -> TrainingData:
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
        return RowsData(df, self.batch_size, seed, about)


class RowsData(TrainingData):
    unit = "rows"  # what the model card counts

    def __init__(self, rows: pd.DataFrame, batch_size: int, seed: int, about: dict[str, str] | None = None) -> None:
        if len(rows) == 0:
            raise ValueError("the training rows are empty")
        self.about = about or {"description": "training rows", "source": ""}
        self.rows, self.seed = rows.reset_index(drop=True), seed
        self.batch_size = min(batch_size, len(rows))
        self.per_epoch = len(rows) // self.batch_size
        self._orders: dict[int, np.ndarray] = {}

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
