"""What the document tasks share: a labelled document file and how it is read.

A CSV or parquet file (by suffix) with a text column, a label column and, optionally, a split
column (``train``/``test``); without one, a seeded split of ``test_share`` of each class is
made and recorded in the metrics (``split_seed``). The document classification task (and its
fine-tuned setting) and the embedding-space analyses (on the ``analysis_split``) read it.
The ``doc_task`` rule writes such files from the notes (note category, ICD-9 triage); your
own labelled documents work as they are.

Errors name the file, the row (1-based, header excluded) or column and the fix, never text.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar

import numpy as np
import pandas as pd

from clinsent.config.declare import knob
from clinsent.errors import InputError
from clinsent.io.reading import shown_columns
from clinsent.io.textfile import check_columns, header_lacks
from clinsent.tasks.base import Task


@dataclass(frozen=True)
class LabelledDocsSettings:
    path: str = knob("", "the labelled documents (.csv or .parquet)", required=True)
    text_column: str = knob("text", "the document text column")
    label_column: str = knob("label", "the class column")
    split_column: str | None = knob("split", "the split column (train/test); null or absent: a seeded split")
    test_share: float = knob(
        0.2, "without a split column: share of each class held out for test", exclusiveMinimum=0, exclusiveMaximum=1
    )
    split_seed: int = knob(0, "without a split column: the seed of that split", minimum=0)
    analysis_split: Literal["train", "test", "all"] = knob(
        "test", "the documents embedded and analysed (analysis tasks; the paper: the evaluation set)"
    )


def read_labelled_docs(s: LabelledDocsSettings) -> pd.DataFrame:
    """Columns text, label (str), split (train/test), row (1-based file row)."""
    path = Path(s.path)
    if not path.exists():
        raise InputError(path, "file not found", "point the eval set's path at your labelled documents")
    try:
        df = (
            pd.read_parquet(path) if path.suffix == ".parquet" else pd.read_csv(path, dtype=str, keep_default_na=False)
        )
    except Exception as exc:  # noqa: BLE001  (pandas and pyarrow raise many kinds)
        raise InputError(
            path,
            f"cannot be read as {'parquet' if path.suffix == '.parquet' else 'CSV'} ({type(exc).__name__})",
            "check that the file is complete",
        ) from None
    wanted = [s.text_column, s.label_column]
    missing = [c for c in wanted if c not in df.columns]
    if missing:
        columns = [str(c) for c in df.columns]  # a CSV's header line: not shown (see header_lacks)
        raise InputError(
            path,
            f"missing column(s) {missing} (columns: {shown_columns(columns, wanted)})"
            if path.suffix == ".parquet"
            else header_lacks(columns, missing),
            "set text_column and label_column of the eval set",
        )
    out = pd.DataFrame(
        {
            "text": df[s.text_column].astype(str),
            "label": df[s.label_column].astype(str).str.strip(),
            "row": np.arange(1, len(df) + 1),
        }
    )
    blank = (out["text"].str.strip() == "") | (out["label"] == "")
    if blank.any():
        rows = out.loc[blank, "row"].tolist()
        raise InputError(
            path, f"{len(rows)} row(s) without text or label (rows {rows[:10]})", "fill or drop those rows"
        )
    if s.split_column and s.split_column in df.columns:
        out["split"] = df[s.split_column].astype(str).str.strip().str.lower().replace({"dev": "test", "eval": "test"})
        bad = ~out["split"].isin(["train", "test"])
        if bad.any():
            rows = out.loc[bad, "row"].tolist()
            raise InputError(
                f"{path}: column {s.split_column}",
                f"{len(rows)} row(s) are neither train nor test (rows {rows[:10]})",
                "use train or test (dev/eval count as test)",
            )
    else:
        out["split"] = seeded_split(out["label"].to_numpy(), s.test_share, s.split_seed)
    classes = out["label"].unique()
    if len(classes) < 2:
        raise InputError(
            f"{path}: column {s.label_column}",
            f"one class only ({len(out)} rows)",
            "a classification task needs at least two classes",
        )
    return out


def seeded_split(labels: np.ndarray, test_share: float, seed: int) -> np.ndarray:
    """train/test per row: round(test_share x n) of each class to test (at least one, and at
    least one left to train when the class has two or more), drawn with ``seed``."""
    rng = np.random.default_rng(seed)
    split = np.array(["train"] * len(labels), dtype=object)
    for c in sorted(set(labels.tolist())):
        idx = np.flatnonzero(labels == c)
        k = int(round(test_share * len(idx)))
        k = min(max(k, 1), len(idx) - 1) if len(idx) > 1 else 0
        split[rng.permutation(idx)[:k]] = "test"
    return split


LS = TypeVar("LS", bound=LabelledDocsSettings, covariant=True)


class LabelledDocsTask(Task[LS]):
    """A task over one labelled document file (``data``: :func:`read_labelled_docs`'s frame)."""

    def files(self) -> list[str]:
        return [self.settings.path]

    def check_header(self) -> None:
        s = self.settings
        check_columns(s.path, [s.text_column, s.label_column], "set text_column and label_column of the eval set")

    def read(self) -> Any:
        return read_labelled_docs(self.settings)

    def analysed(self) -> pd.DataFrame:
        d = self.data
        return d if self.settings.analysis_split == "all" else d[d["split"] == self.settings.analysis_split]

    def texts(self) -> list[str]:
        return list(dict.fromkeys(self.analysed()["text"].tolist()))

    def labelled_vectors(
        self, texts: list[str], vectors: np.ndarray, normalize: bool = True
    ) -> tuple[np.ndarray, np.ndarray]:
        """(vectors, L2-normalised unless asked otherwise; class index per document) of the
        analysed documents, in file order."""
        d = self.analysed()
        x = self.lookup(texts, vectors, d["text"].tolist()).astype(np.float64)
        if normalize:
            x /= np.clip(np.linalg.norm(x, axis=1, keepdims=True), 1e-12, None)
        return x, np.unique(d["label"].to_numpy(), return_inverse=True)[1]

    def statistics(self) -> dict[str, Any]:
        d = self.data
        return {
            "task": self.name,
            "unit": "documents",
            "splits": d["split"].value_counts().to_dict(),
            "used": self.settings.analysis_split,
            "metric": self.headline,
        }
