"""Frozen-embedding probes (SentEval, Conneau and Kiela 2018), the augmentation paper's
evaluation on ChineseBLUE (Table 4: cMedIC, cMedQQ, cMedQA, cMedQNLI).

A logistic-regression classifier (scikit-learn) is trained on the frozen embeddings of the
task's train split: single sentences (features u) or pairs (``pair_features: senteval``, the
default: |u - v| and u * v, as SentEval's SICK-E and MRPC probes build them;
``u_v_absdiff_product``: u, v, |u - v|, u * v, InferSent's richer features and this project's
earlier default; ``concat``: u, v). As in SentEval's SplitClassifier, the inverse
regularisation strength C is chosen on the dev split among ``c_grid`` (SentEval's 2^-2 .. 2^3)
by accuracy, a tie going to the first C of the grid; the classifier with that C is scored on the
test split: ``f1`` (binary F1 of ``positive_label`` for two classes, macro F1 otherwise),
``weighted_f1``, ``macro_f1`` and ``accuracy``. The paper reports weighted F1 for cMedIC and
cMedQA and F1 for cMedQQ and cMedQNLI: set ``headline``.

The clinical sentence-transformers NLI study's MedNLI probe is ``classifier: mlp`` (a small
neural network, scikit-learn's ``MLPClassifier`` with one hidden layer of ``hidden`` units,
seeded) on the concatenated premise and hypothesis embeddings (``pair_features: concat``). Its
table has accuracy and precision, recall and F1; the study's recall equals its accuracy, so
they are support-weighted averages: both the macro and the weighted ones are reported. With
``classes`` named, the test confusion matrix is reported too, as counts
``confusion:<true>:<predicted>`` (the confusion-matrix figure).

Files: one table with a text column (``text``; pairs: ``text1``, ``text2``), ``label`` and
``split`` (train/dev/test), as TSV (header; no quote handling) or JSON lines; or NLI files as
distributed (``format: nli_jsonl``: MedNLI's ``mli_{train,dev,test}_v1.jsonl`` as ``path``,
``dev_path`` and ``test_path``, fields ``sentence1``, ``sentence2``, ``gold_label``; SNLI's
``-`` labels are skipped and counted). Text passes
through untouched (UTF-8 end to end: Chinese works with a Chinese base model). Errors name the
file and line, never the text.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from clinsent.config.declare import knob
from clinsent.errors import InputError
from clinsent.evaluation.bootstrap import Items, rowwise_classification
from clinsent.evaluation.probe_data import PROBE_FORMATS, ProbeSet, check_positive_label, read_probe
from clinsent.io.textfile import check_columns
from clinsent.tasks.base import TASKS, Task

SENTEVAL_C = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0)  # SentEval: 2 ** t for t in -2 .. 3


@dataclass(frozen=True)
class ProbeSettings:
    path: str = knob("", "the task file (every split in one file, a split column)", required=True)
    format: str = knob(
        "tsv",
        "a registered probe format (clinsent.evaluation.probe_data.PROBE_FORMATS): tsv (header), jsonl "
        "(one object per line) or nli_jsonl (MedNLI/SNLI as distributed, a file per split)",
        names=PROBE_FORMATS,
    )
    dev_path: str | None = knob(None, "format nli_jsonl: the dev file (path is the train file)")
    test_path: str | None = knob(None, "format nli_jsonl: the test file")
    inputs: Literal["single", "pair"] = knob("single", "single: column text; pair: columns text1, text2")
    headline: Literal["f1", "weighted_f1", "macro_f1", "accuracy"] = knob(
        "f1", "the metric of tables and selection (the paper: weighted_f1 for cMedIC and cMedQA, f1 otherwise)"
    )
    positive_label: str = knob("1", "the positive class of binary F1 (with two label values, it must be one of them)")
    splits: tuple[str, ...] = knob(("train", "dev", "test"), "the names of the train, dev and test splits")
    c_grid: tuple[float, ...] = knob(SENTEVAL_C, "values of C (> 0) tried on the dev split (SentEval's grid)")
    max_iter: int = knob(2000, "iterations of the solver (logistic regression or the MLP's epochs)", minimum=1)
    classifier: Literal["logistic", "mlp"] = knob(
        "logistic",
        "logistic (SentEval; C picked on dev) or mlp (one hidden layer; the clinical NLI study's classifier)",
    )
    hidden: int = knob(256, "classifier mlp: hidden units", minimum=1)
    pair_features: Literal["senteval", "u_v_absdiff_product", "concat"] = knob(
        "senteval",
        "pairs: senteval (|u - v|, u * v: SentEval's SICK-E and MRPC), u_v_absdiff_product (u, v, "
        "|u - v|, u * v: InferSent's) or concat (u, v: the clinical NLI study)",
    )
    classes: tuple[str, ...] | None = knob(
        None,
        "the labels in order (e.g. entailment, neutral, contradiction): "
        "reports the test confusion matrix; a label outside them is an error",
    )


# pair_features -> the blocks of a pair's feature row
PAIR_FEATURES: dict[str, Callable[[np.ndarray, np.ndarray], list[np.ndarray]]] = {
    "senteval": lambda u, v: [np.abs(u - v), u * v],
    "u_v_absdiff_product": lambda u, v: [u, v, np.abs(u - v), u * v],
    "concat": lambda u, v: [u, v],
}


@TASKS.register("probe", settings=ProbeSettings)
class Probe(Task[ProbeSettings]):
    metrics: tuple[str, ...] = (
        "f1",
        "weighted_f1",
        "macro_f1",
        "accuracy",
        "macro_precision",
        "macro_recall",
        "weighted_precision",
        "weighted_recall",
        "dev_accuracy",
        "c",
    )
    settings: ProbeSettings

    def __init__(self, set_name: str, settings: ProbeSettings) -> None:
        super().__init__(set_name, settings)
        self.headline = settings.headline
        if settings.classes:
            self.metrics = (
                *type(self).metrics,
                *(f"confusion:{t}:{p}" for t in settings.classes for p in settings.classes),
            )
        # the regularisation chosen on the dev split and the confusion counts: no paired difference
        self.not_differenced = ("c", *(m for m in self.metrics if m.startswith("confusion:")))
        if len(settings.splits) != 3:
            raise InputError(
                f"config: eval_sets.{set_name}.splits",
                f"{len(settings.splits)} names",
                "give three: train, dev and test",
            )
        PROBE_FORMATS.get(settings.format, where=f"config: eval_sets.{set_name}.format").check(settings, set_name)
        if not settings.c_grid or min(settings.c_grid) <= 0:
            raise InputError(
                f"config: eval_sets.{set_name}.c_grid", f"{list(settings.c_grid)}", "give one or more values above 0"
            )

    def files(self) -> list[str]:
        return PROBE_FORMATS.get(self.settings.format).files(self.settings)

    def check_header(self) -> None:
        s = self.settings
        header = PROBE_FORMATS.get(s.format).header  # jsonl has no header line; nli_jsonl is MedNLI's own layout
        if header is not None:
            check_columns(
                s.path, header(s), f"give the file a header line with {', '.join(header(s))}", PROBE_FORMATS.names()
            )

    def read(self) -> ProbeSet:
        data = read_probe(self.settings.path, self.settings)
        check_positive_label(data, self.settings, self.set_name)
        return data

    def texts(self) -> list[str]:
        d = self.data
        return list(dict.fromkeys([*d.texts1, *(d.texts2 or [])]))

    def features(self, texts: list[str], vectors: np.ndarray) -> np.ndarray:
        """u, or the pair's features (``pair_features``), one row per item of the file."""
        d = self.data
        u = self.lookup(texts, vectors, d.texts1).astype(np.float64)
        if d.texts2 is None:
            return u
        v = self.lookup(texts, vectors, d.texts2).astype(np.float64)
        return np.hstack(PAIR_FEATURES[self.settings.pair_features](u, v))

    def _fit(self, x: np.ndarray, y: np.ndarray, train: np.ndarray, dev: np.ndarray) -> tuple[float, float, Any]:
        """(dev accuracy, C, classifier): logistic regression with C picked on dev, or the MLP."""
        from sklearn.linear_model import LogisticRegression
        from sklearn.metrics import accuracy_score
        from sklearn.neural_network import MLPClassifier

        s = self.settings
        if s.classifier == "mlp":
            clf = MLPClassifier(hidden_layer_sizes=(s.hidden,), max_iter=s.max_iter, random_state=0).fit(
                x[train], y[train]
            )
            return float(accuracy_score(y[dev], clf.predict(x[dev]))), 0.0, clf
        best: tuple[float, float, Any] = (-1.0, 0.0, None)
        for c in s.c_grid:
            lr = LogisticRegression(C=c, max_iter=s.max_iter, random_state=0).fit(x[train], y[train])
            acc = float(accuracy_score(y[dev], lr.predict(x[dev])))
            if acc > best[0]:
                best = (acc, c, lr)
        return best

    def _predict(self, texts: list[str], vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray, dict[str, float]]:
        """The test labels, the classifier's predictions for them, and the fit's own figures (dev
        accuracy, the C chosen on dev, split sizes)."""
        s, d = self.settings, self.data
        x = self.features(texts, vectors)
        y = np.asarray(d.labels)
        train, dev, test = (d.rows(name) for name in s.splits)
        dev_acc, c, clf = self._fit(x, y, train, dev)
        fitted = {"dev_accuracy": dev_acc, "c": float(c), "n_train": float(len(train)), "n_test": float(len(test))}
        return y[test], np.asarray(clf.predict(x[test])), fitted

    def _binary(self) -> bool:
        """F1 of the positive class (two labels, one of them the positive) or the macro F1."""
        classes = sorted(set(self.data.labels))
        return len(classes) == 2 and self.settings.positive_label in classes

    def score(
        self, texts: list[str], vectors: np.ndarray, context: Mapping[str, Any] | None = None
    ) -> dict[str, float]:
        return self._metrics(*self._predict(texts, vectors))

    def _metrics(self, truth: np.ndarray, pred: np.ndarray, fitted: dict[str, float]) -> dict[str, float]:
        from sklearn.metrics import accuracy_score, confusion_matrix, f1_score, precision_recall_fscore_support

        s = self.settings
        if self._binary():
            f1 = float(f1_score(truth, pred, pos_label=s.positive_label, average="binary", zero_division=0))
        else:
            f1 = float(f1_score(truth, pred, average="macro", zero_division=0))
        out = {"f1": f1, "accuracy": float(accuracy_score(truth, pred)), **fitted}
        for average in ("macro", "weighted"):
            p, r, f, _ = precision_recall_fscore_support(truth, pred, average=average, zero_division=0)
            out |= {f"{average}_precision": float(p), f"{average}_recall": float(r), f"{average}_f1": float(f)}
        if s.classes:
            matrix = confusion_matrix(truth, pred, labels=list(s.classes))
            out |= {
                f"confusion:{t}:{p}": float(matrix[i, j])
                for i, t in enumerate(s.classes)
                for j, p in enumerate(s.classes)
            }
        return out

    def _items(self, truth: np.ndarray, pred: np.ndarray) -> Items:
        """The test items, each with its true and predicted label (the classifier and its C held fixed):
        F1, accuracy and the macro and weighted precision / recall / F1 of the resampled items."""
        classes = sorted(set(truth.tolist()) | set(pred.tolist()) | set(self.data.labels))
        index = {c: i for i, c in enumerate(classes)}
        y, p = np.array([index[c] for c in truth]), np.array([index[c] for c in pred])
        positive = index[self.settings.positive_label] if self._binary() else None
        names = ("f1", "accuracy", *(f"{a}_{m}" for a in ("macro", "weighted") for m in ("precision", "recall", "f1")))

        def statistic(idx: np.ndarray) -> np.ndarray:
            got = rowwise_classification(y, p, idx, len(classes), positive)
            return np.stack(
                [got["binary_f1"] if positive is not None else got["macro_f1"], *(got[n] for n in names[1:])]
            )

        return Items(len(y), names, statistic, "test items")

    def items(self, texts: list[str], vectors: np.ndarray) -> Items:
        truth, pred, _ = self._predict(texts, vectors)
        return self._items(truth, pred)

    def score_and_items(self, texts: list[str], vectors: np.ndarray) -> tuple[dict[str, float], Items]:
        truth, pred, fitted = self._predict(texts, vectors)  # one fit for both
        return self._metrics(truth, pred, fitted), self._items(truth, pred)

    def statistics(self) -> dict[str, Any]:
        d, s = self.data, self.settings
        return {
            "task": f"classification ({'pairs' if d.texts2 is not None else 'sentences'})",
            "unit": "pairs" if d.texts2 is not None else "sentences",
            "splits": {name: int(len(d.rows(name))) for name in s.splits},
            "used": "train, dev (C), test",
            "metric": s.headline,
            "classes": len(set(d.labels)),
        }
