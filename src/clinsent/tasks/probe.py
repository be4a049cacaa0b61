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

import csv
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

import numpy as np

from clinsent.errors import InputError
from clinsent.evaluation.bootstrap import Items, rowwise_classification
from clinsent.io import jsonl_objects
from clinsent.reading import Readers
from clinsent.settings import knob
from clinsent.tasks.base import TASKS, Task
from clinsent.textfile import check_columns, text_lines

SENTEVAL_C = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0)  # SentEval: 2 ** t for t in -2 .. 3

Records = list[tuple[str, dict[str, Any]]]  # (where: file and line, never text; the row's fields)


@dataclass(frozen=True)
class ProbeFormat:
    """A probe file layout: its records (every split), the files it reads, and what it needs of
    the entry (checked when the config is read)."""

    read: Callable[[ProbeSettings], Records]
    files: Callable[[ProbeSettings], list[str]] = lambda s: [s.path]
    check: Callable[[ProbeSettings, str], None] = lambda s, set_name: None
    header: Callable[[ProbeSettings], list[str]] | None = (
        None  # the columns its header line must hold (None: no header)
    )


PROBE_FORMATS: Readers[ProbeFormat] = Readers("probe", "probe format", "eval_sets.<name>.format", read_in_full=True)


@dataclass(frozen=True)
class ProbeSettings:
    path: str = knob("", "the task file (every split in one file, a split column)", required=True)
    format: str = knob(
        "tsv",
        "a registered probe format (clinsent.tasks.probe.PROBE_FORMATS): tsv (header), jsonl "
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


@dataclass(frozen=True)
class ProbeSet:
    texts1: list[str]
    texts2: list[str] | None
    labels: list[str]
    splits: list[str]

    def rows(self, split: str) -> np.ndarray:
        return np.array([i for i, s in enumerate(self.splits) if s == split], dtype=np.int64)


def _columns(settings: ProbeSettings) -> list[str]:
    return (["text"] if settings.inputs == "single" else ["text1", "text2"]) + ["label", "split"]


def _opened(read: Callable[[Path], Records]) -> Callable[[ProbeSettings], Records]:
    """One file with a split column, its missing file named (bad encoding: clinsent.textfile)."""

    def records(settings: ProbeSettings) -> Records:
        path = Path(settings.path)
        try:
            return read(path)
        except FileNotFoundError as exc:
            raise InputError(path, "the probe file does not exist", "fix `eval_sets.<name>.path`") from exc

    return records


def _tsv(path: Path) -> Records:
    rows = list(csv.reader(text_lines(path), delimiter="\t", quoting=csv.QUOTE_NONE))
    if not rows:
        return []
    header = [h.strip() for h in rows[0]]
    out = []
    for n, r in enumerate(rows[1:], start=2):
        if not any(c.strip() for c in r):
            continue
        if len(r) > len(header):  # the row would shift into the wrong columns
            raise InputError(
                f"{path}:{n}",
                f"{len(r)} fields, the header has {len(header)} (a tab inside a text?)",
                "remove tabs from the texts (the TSV has no quoting), or write the file as jsonl",
            )
        out.append((f"{path}:{n}", dict(zip(header, r, strict=False))))
    return out


def _jsonl(path: Path) -> Records:
    return [(f"{path}:{n}", obj) for n, obj in jsonl_objects(path, "write one JSON object per line")]


def _nli_records(settings: ProbeSettings) -> Records:
    """MedNLI/SNLI jsonl files as pair records, a split per file (``-`` labels skipped)."""
    from clinsent.data.nli import read_nli_jsonl

    out: Records = []
    for split, path in zip(settings.splits, (settings.path, settings.dev_path, settings.test_path), strict=True):
        if not path:
            raise InputError(
                "config: eval_sets",
                f"format nli_jsonl needs path, dev_path and test_path (no {split} file)",
                "give the train, dev and test files",
            )
        if not Path(path).exists():
            raise InputError(path, "the probe file does not exist", "fix `path`, `dev_path` or `test_path`")
        for n, (p, h, label) in enumerate(read_nli_jsonl(path, {"no_gold_label": 0}), start=1):
            out.append((f"{path} pair {n}", {"text1": p, "text2": h, "label": label, "split": split}))
    return out


def _nli_check(settings: ProbeSettings, set_name: str) -> None:
    if settings.inputs != "pair" or not settings.dev_path or not settings.test_path:
        raise InputError(
            f"config: eval_sets.{set_name}",
            "format nli_jsonl reads premise/hypothesis pairs from three files",
            "set inputs: pair, dev_path and test_path",
        )


PROBE_FORMATS.register("tsv")(ProbeFormat(_opened(_tsv), header=_columns))
PROBE_FORMATS.register("jsonl")(ProbeFormat(_opened(_jsonl)))
PROBE_FORMATS.register("nli_jsonl")(
    ProbeFormat(_nli_records, files=lambda s: [s.path] + [f for f in (s.dev_path, s.test_path) if f], check=_nli_check)
)


def read_probe(path: str | Path, settings: ProbeSettings) -> ProbeSet:
    path = Path(path)
    records = PROBE_FORMATS.get(settings.format).read(replace(settings, path=str(path)))
    if not records:
        raise InputError(path, "the probe file has no rows", "point the eval set at a file with rows")
    wanted = _columns(settings)
    cols: dict[str, list[str]] = {c: [] for c in wanted}
    for where, rec in records:
        missing = [c for c in wanted if rec.get(c) is None or str(rec.get(c)).strip() == ""]
        if missing:
            raise InputError(
                where, f"no value for {missing}", f"give every row {', '.join(wanted)} (inputs: {settings.inputs})"
            )
        for c in wanted:
            cols[c].append(str(rec[c]).strip())
    data = ProbeSet(
        cols["text"] if settings.inputs == "single" else cols["text1"],
        None if settings.inputs == "single" else cols["text2"],
        cols["label"],
        cols["split"],
    )
    other = [i for i, split in enumerate(data.splits) if split not in settings.splits]
    if other:
        cased = sum(data.splits[i].lower() in settings.splits for i in other)
        raise InputError(
            records[other[0]][0],
            f"{len(other)} row(s) have a split that is not one of "
            f"{list(settings.splits)} (the values are not shown; {cased} of them differ from one only in "
            "case); they would be left out of every split",
            "fix the split column, or set `splits` to the file's three names",
        )
    for name in settings.splits:
        if not len(data.rows(name)):
            raise InputError(
                path,
                f"split {name!r} has no rows ({len(set(data.splits))} other split value(s); values are not shown)",
                "label rows train, dev and test, or set `splits` to the file's names",
            )
    if settings.classes:
        unknown = sorted(set(data.labels) - set(settings.classes))
        if unknown:
            first = next(i for i, lab in enumerate(data.labels) if lab not in settings.classes)
            raise InputError(
                records[first][0],
                f"{len(unknown)} label value(s) are not among classes "
                f"{list(settings.classes)} ({sum(lab not in settings.classes for lab in data.labels)} rows; "
                "the values are not shown)",
                "fix the rows, or list every label under `classes`",
            )
    train_labels = {data.labels[i] for i in data.rows(settings.splits[0])}
    if len(train_labels) < 2:
        raise InputError(path, f"the train split has {len(train_labels)} class", "a probe needs two classes or more")
    return data


def check_positive_label(data: ProbeSet, settings: ProbeSettings, set_name: str) -> None:
    """Two classes whose names do not include ``positive_label``: the binary F1 cannot be
    computed, and ``f1`` would silently be the macro F1. Stop, naming the key (the label values
    are the file's; they are not shown)."""
    classes = set(data.labels)
    if len(classes) == 2 and settings.positive_label not in classes:
        cased = sum(c.strip().lower() == settings.positive_label.strip().lower() for c in classes)
        raise InputError(
            f"config: eval_sets.{set_name}.positive_label",
            f"{settings.positive_label!r} is not one of "
            f"the two label values of {settings.path} (values not shown; {cased} differ from it only in "
            "case or spaces), so `f1` would be the macro F1, not the binary F1 of the positive class",
            "set `positive_label` to the label of the positive class as written in the file",
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
            check_columns(s.path, header(s), f"give the file a header line with {', '.join(header(s))}")

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
