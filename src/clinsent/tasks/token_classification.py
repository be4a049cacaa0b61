"""Named-entity recognition as token classification (the healthcare-LM paper's Table 10: each
pre-trained model fine-tuned on i2b2 2010, 2012 and 2014 NER, frozen or fully fine-tuned,
entity-level micro F1): CoNLL-style train and test files (:mod:`clinsent.evaluation.conll`).

A token task has no zero-shot score from sentence embeddings: its eval set is scored by
``finetune`` entries only (:mod:`clinsent.finetune.token_classifier`), so it plans no embed or
evaluate job of its own. Metrics: ``f1_micro`` (headline), ``precision_micro``,
``recall_micro`` (exact type and span, as seqeval), and ``entities`` (gold entities in test).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from clinsent.config.declare import knob
from clinsent.evaluation.conll import TaggedSentence, read_conll
from clinsent.tasks.base import TASKS, Task


@dataclass(frozen=True)
class TokenClassificationSettings:
    path: str = knob("", "the training file (CoNLL style: a token per line, its BIO tag last)", required=True)
    test_path: str = knob("", "the test file, same layout", required=True)


@dataclass(frozen=True)
class TokenSplits:
    train: list[TaggedSentence]
    test: list[TaggedSentence]

    def labels(self) -> list[str]:
        """O first, then the train file's other tags sorted."""
        tags = {t for s in self.train for t in s.tags} - {"O"}
        return ["O", *sorted(tags)]


@TASKS.register("token_classification", settings=TokenClassificationSettings)
class TokenClassification(Task[TokenClassificationSettings]):
    headline = "f1_micro"
    metrics = ("f1_micro", "precision_micro", "recall_micro", "entities")
    not_differenced = ("entities",)  # a count: no paired difference
    token_training = True
    zero_shot = False

    def files(self) -> list[str]:
        return [self.settings.path, self.settings.test_path]

    def read(self) -> TokenSplits:
        return TokenSplits(read_conll(self.settings.path), read_conll(self.settings.test_path))

    def texts(self) -> list[str]:
        return []

    def score(
        self, texts: list[str], vectors: np.ndarray, context: Mapping[str, Any] | None = None
    ) -> dict[str, float]:
        raise NotImplementedError(
            "a token classification set is scored by finetune entries, not from sentence embeddings"
        )

    def statistics(self) -> dict[str, Any]:
        d = self.data
        return {
            "task": self.name,
            "unit": "sentences",
            "splits": {"train": len(d.train), "test": len(d.test)},
            "used": "test",
            "metric": self.headline,
        }
