"""Document classification (the healthcare-LM paper's downstream tasks: note category M-Cat,
ICD-9 triage M-Tri, and any labelled documents of yours), frozen setting: the encoder embeds
the train and test documents once and only a two-layer head trains on the train embeddings
(:func:`clinsent.evaluation.classification.train_head`: ``epochs`` epochs, AdamW at
``learning_rate``, batch ``batch_size``, the paper's Table 11 downstream column); the figures
of the epoch with the best test F1 macro are reported, as the paper's Table 3 does ("the
maximum F1 macro achieved over 5 epochs"). ``per_class``: the few-shot setting (Figure 3,
Table 15), n seeded training documents per class.

The fine-tuned, k-layers-frozen and few-shot fine-tuned settings are ``finetune`` entries on
the same eval set (:mod:`clinsent.finetune.classifier`); this task says what their examples are
(:meth:`DocClassification.examples`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from clinsent.config.declare import knob
from clinsent.evaluation.bootstrap import Items
from clinsent.evaluation.classification import METRICS, best_epoch, classification_items, few_shot, train_head
from clinsent.tasks.base import TASKS
from clinsent.tasks.labelled_docs import LabelledDocsSettings, LabelledDocsTask


@dataclass(frozen=True)
class DocClassificationSettings(LabelledDocsSettings):
    per_class: int | None = knob(
        None, "few-shot: train on this many documents per class (seeded; null: all)", minimum=1
    )
    epochs: int = knob(5, "epochs of the head (the paper: 5, best epoch reported)", minimum=1)
    learning_rate: float = knob(1e-4, "AdamW learning rate of the head (the paper: 1e-4)", exclusiveMinimum=0)
    batch_size: int = knob(16, "documents per step (the paper: 16)", minimum=1)
    head_hidden: int | None = knob(None, "width of the head's hidden layer (null: the embedding size)", minimum=1)
    head_dropout: float = knob(0.1, "dropout before each layer of the head", minimum=0, maximum=1)
    seed: int = knob(0, "seed of the head's weights, shuffles and the few-shot draw", minimum=0)


@dataclass(frozen=True)
class Examples:
    """A task's documents as class indices: train (few-shot applied) and test."""

    classes: list[str]
    train_texts: list[str]
    train_y: np.ndarray
    test_texts: list[str]
    test_y: np.ndarray
    train_rows: list[int]  # 1-based file rows used for training (the few-shot record)


@TASKS.register("doc_classification", settings=DocClassificationSettings)
class DocClassification(LabelledDocsTask[DocClassificationSettings]):
    headline = "f1_macro"
    metrics = METRICS
    doc_training = True

    def examples(self, per_class: int | None = None, seed: int | None = None) -> Examples:
        s = self.settings
        d = self.data
        classes = sorted(d["label"].unique())
        index = {c: i for i, c in enumerate(classes)}
        train, test = d[d["split"] == "train"], d[d["split"] == "test"]
        n = per_class if per_class is not None else s.per_class
        if n is not None:
            keep = few_shot(
                train["label"].to_numpy(),
                n,
                s.seed if seed is None else seed,
                f"{s.path} (eval set {self.set_name}, train split)",
            )
            train = train.iloc[keep]
        return Examples(
            classes,
            train["text"].tolist(),
            train["label"].map(index).to_numpy(),
            test["text"].tolist(),
            test["label"].map(index).to_numpy(),
            train["row"].tolist(),
        )

    def texts(self) -> list[str]:
        e = self.examples()
        return list(dict.fromkeys(e.train_texts + e.test_texts))

    def score(
        self, texts: list[str], vectors: np.ndarray, context: Mapping[str, Any] | None = None
    ) -> dict[str, float]:
        return self.score_and_items(texts, vectors)[0]

    def items(self, texts: list[str], vectors: np.ndarray) -> Items:
        return self.score_and_items(texts, vectors)[1]

    def score_and_items(self, texts: list[str], vectors: np.ndarray) -> tuple[dict[str, float], Items]:
        """One fit of the head: the best epoch's metrics, and its test documents with their
        predicted probabilities as the items of the intervals (the head held fixed)."""
        s, e = self.settings, self.examples()
        epochs, probas = train_head(
            self.lookup(texts, vectors, e.train_texts),
            e.train_y,
            self.lookup(texts, vectors, e.test_texts),
            e.test_y,
            len(e.classes),
            s.epochs,
            s.learning_rate,
            s.batch_size,
            s.seed,
            s.head_hidden,
            s.head_dropout,
        )
        best = best_epoch(epochs)
        return (
            {**epochs[best - 1]["test"], "best_epoch": float(best)},
            classification_items(e.test_y, probas[best - 1], len(e.classes)),
        )

    def statistics(self) -> dict[str, Any]:
        e = self.examples()
        return {
            "task": self.name,
            "unit": "documents",
            "splits": {"train": len(e.train_texts), "test": len(e.test_texts)},
            "used": "test",
            "metric": self.headline,
        }
