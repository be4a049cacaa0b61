"""Recognising question entailment (RQE; Ben Abacha and Demner-Fushman 2016; MEDIQA 2019), as
BioSimCSE evaluates it zero-shot: the cosine of the two questions' embeddings; the threshold
that maximises accuracy on the eval set's ``dev_path`` file is applied to its test file
(``path``). Metrics: ``accuracy`` (test, at the dev threshold), ``threshold``, ``dev_accuracy``.

Fine-tuning (BioSimCSE's fine-tuned setting) trains on the eval set's ``path`` pairs (give an
RQE training file as ``path`` of a training eval set) with sentence-transformers'
``OnlineContrastiveLoss`` on the cosine distance; a cross-encoder's scores go through the same
dev-tuned threshold.

Formats:
- ``mediqa_xml``: the MEDIQA 2019 / AMIA 2016 RQE XML as distributed,
  ``<pair pid=".." value="true|false"><chq>…</chq><faq>…</faq></pair>`` (XML entities decoded,
  inner whitespace collapsed);
- ``rqe_tsv``: tab-separated with a header naming ``question1``, ``question2`` and ``label``
  (true/false or 1/0).
"""

from __future__ import annotations

import csv
import xml.etree.ElementTree as ET
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from clinsent.config.declare import knob
from clinsent.errors import InputError
from clinsent.evaluation.bootstrap import Items
from clinsent.evaluation.metrics import cosine_rows
from clinsent.io.reading import Readers, extra_fields, state_repeats
from clinsent.io.textfile import check_columns, csv_rows, header_lacks, text_lines
from clinsent.tasks.base import TASKS, PairTargets, Task

TRUE, FALSE = ("true", "1"), ("false", "0")


@dataclass(frozen=True)
class RqeSet:
    questions1: list[str]
    questions2: list[str]
    labels: np.ndarray  # bool


def _label(value: str | None, where: str) -> bool:
    v = (value or "").strip().lower()
    if v in TRUE or v in FALSE:
        return v in TRUE
    raise InputError(where, "the label is neither true nor false (the value is not shown)", "fix the pair's value")


def _text(element: ET.Element | None) -> str:
    return " ".join("".join(element.itertext()).split()) if element is not None else ""


def read_mediqa_xml(path: str | Path) -> RqeSet:
    try:
        root = ET.parse(path).getroot()
    except FileNotFoundError as exc:
        raise InputError(path, "the RQE file does not exist", "fix `eval_sets.<name>.path` or `dev_path`") from exc
    except ET.ParseError as exc:
        raise InputError(path, f"not well-formed XML ({exc})", "check that the file is complete") from exc
    q1, q2, labels, names = [], [], [], []
    for i, pair in enumerate(root.iter("pair"), start=1):
        pid = pair.get("pid", "")
        where = f"{path}: pair {i}" + (
            f" (pid {pid})" if pid.isdigit() and len(pid) <= 12 else ""
        )  # else: text, not shown
        chq, faq = _text(pair.find("chq")), _text(pair.find("faq"))
        if not chq or not faq:
            raise InputError(where, "lacks a <chq> or <faq> question", "give both questions of every pair")
        q1.append(chq)
        q2.append(faq)
        labels.append(_label(pair.get("value"), where))
        names.append(where)
    if not labels:
        raise InputError(path, "no <pair> elements", "point the eval set at an RQE XML file")
    state_repeats(str(path), list(zip(q1, q2, labels, strict=True)), names)
    return RqeSet(q1, q2, np.asarray(labels, dtype=bool))


RQE_TSV_COLUMNS = ("question1", "question2", "label")
RQE_TSV_FIX = "add a header `question1<TAB>question2<TAB>label`"


def read_rqe_tsv(path: str | Path) -> RqeSet:
    try:
        rows = [
            r
            for _, r in csv_rows(text_lines(path), path, delimiter="\t", quoting=csv.QUOTE_NONE)
            if any(c.strip() for c in r)
        ]
    except FileNotFoundError as exc:
        raise InputError(path, "the RQE file does not exist", "fix `eval_sets.<name>.path` or `dev_path`") from exc
    header = [h.strip() for h in rows[0]] if rows else []
    missing = [c for c in RQE_TSV_COLUMNS if c not in header]
    if missing:
        raise InputError(f"{path}:1", header_lacks(header, missing), RQE_TSV_FIX)
    i1, i2, il = (header.index(c) for c in RQE_TSV_COLUMNS)
    q1, q2, labels = [], [], []
    for line, r in enumerate(rows[1:], start=2):
        if len(r) <= max(i1, i2, il):
            raise InputError(f"{path}:{line}", f"{len(r)} field(s), expected {len(header)}", "fix the row")
        extra_fields(r, len(header), f"{path}:{line}", "remove the tab inside a question (a TSV has no quoting)")
        q1.append(r[i1].strip())
        q2.append(r[i2].strip())
        labels.append(_label(r[il], f"{path}:{line}"))
    if not labels:
        raise InputError(path, "no pairs", "point the eval set at a non-empty RQE file")
    state_repeats(str(path), list(zip(q1, q2, labels, strict=True)), [f"{path}:{n}" for n in range(2, len(rows) + 1)])
    return RqeSet(q1, q2, np.asarray(labels, dtype=bool))


# RQE file layouts (``eval_sets.<name>.format``): name -> reader
RQE_FORMATS: Readers[Callable[[str | Path], RqeSet]] = Readers(
    "rqe", "RQE format", "eval_sets.<name>.format", read_in_full=True
)
RQE_FORMATS.register("mediqa_xml")(read_mediqa_xml)
RQE_FORMATS.register("rqe_tsv")(read_rqe_tsv)
# the columns a layout's header line must hold, checked at dry run (a layout not here has no header line)
RQE_HEADERS: dict[str, tuple[str, ...]] = {"rqe_tsv": RQE_TSV_COLUMNS}


def best_threshold(scores: np.ndarray, labels: np.ndarray) -> tuple[float, float]:
    """(threshold, accuracy): predicting true for score >= threshold, a threshold with the best
    accuracy.

    The scores, sorted, cut the line into intervals, one per number k of top scores predicted
    true (tied scores are never split). When several neighbouring cuts reach the best accuracy,
    the threshold is the midpoint of their joined interval, from the lowest score the last of
    them predicts false to the lowest score the first of them predicts true (with a single best
    cut: midway between the two scores it falls between, as sentence-transformers'
    ``BinaryClassificationEvaluator``); when best cuts lie apart (a worse one between them), the
    run with the highest scores is used. At the ends the interval is closed by the top score
    (nothing predicted true: just above it) or the bottom one (everything true: the bottom score)."""
    scores = np.asarray(scores, dtype=np.float64)
    order = np.argsort(-scores, kind="mergesort")
    s, y = scores[order], np.asarray(labels, dtype=bool)[order]
    n = len(s)
    tp = np.concatenate([[0], np.cumsum(y)])  # the top k predicted true, k = 0..n
    fp = np.arange(n + 1) - tp
    acc = (tp + (n - y.sum() - fp)) / n
    valid = np.ones(n + 1, dtype=bool)
    valid[1:n] = s[:-1] > s[1:]  # never split tied scores
    cuts = np.flatnonzero(valid)
    best = acc[cuts] == acc[cuts].max()
    first = int(np.argmax(best))
    last = first
    while last + 1 < len(cuts) and best[last + 1]:
        last += 1
    k_first, k_last = int(cuts[first]), int(cuts[last])
    if k_last == 0:
        return float(np.nextafter(s[0], np.inf)), float(acc[0])
    hi = s[k_first - 1] if k_first > 0 else s[0]  # the lowest score the first best cut predicts true
    lo = s[k_last] if k_last < n else s[-1]  # the highest score the last best cut predicts false
    return float((hi + lo) / 2.0), float(acc[k_first])


@dataclass(frozen=True)
class RqeSettings:
    path: str = knob("", "the test file", required=True)
    dev_path: str = knob("", "the file the threshold is tuned on", required=True)
    format: str = knob(
        "mediqa_xml",
        "a registered RQE format (clinsent.tasks.rqe.RQE_FORMATS): mediqa_xml or rqe_tsv "
        "(question1, question2, label)",
        names=RQE_FORMATS,
    )


@TASKS.register("rqe", settings=RqeSettings)
class Rqe(Task[RqeSettings]):
    pair_training = True
    headline = "accuracy"
    metrics = ("accuracy", "threshold", "dev_accuracy")
    not_differenced = ("threshold",)  # fitted on the dev file: no paired difference
    settings: RqeSettings

    def files(self) -> list[str]:
        return [self.settings.path, self.settings.dev_path]

    def check_header(self) -> None:
        s = self.settings
        columns = RQE_HEADERS.get(s.format)  # the XML layout has no header line to check
        if columns:
            for path in (s.path, s.dev_path):
                check_columns(path, list(columns), RQE_TSV_FIX, RQE_FORMATS.names())

    def read(self) -> tuple[RqeSet, RqeSet]:
        reader = RQE_FORMATS.get(self.settings.format)
        return reader(self.settings.path), reader(self.settings.dev_path)

    def texts(self) -> list[str]:
        test, dev = self.data
        return list(dict.fromkeys([*test.questions1, *test.questions2, *dev.questions1, *dev.questions2]))

    def statistics(self) -> dict[str, Any]:
        test, dev = self.data
        return {
            "task": "question entailment",
            "unit": "pairs",
            "splits": {"dev": len(dev.labels), "test": len(test.labels)},
            "used": "dev (threshold), test",
            "metric": "accuracy",
        }

    def _cosines(self, part: RqeSet, texts: list[str], vectors: np.ndarray) -> np.ndarray:
        return cosine_rows(self.lookup(texts, vectors, part.questions1), self.lookup(texts, vectors, part.questions2))

    def _pair_scores(self, texts: list[str], vectors: np.ndarray) -> list[np.ndarray]:
        """The cosines of the test pairs, then of the dev pairs (:meth:`pair_parts`' order)."""
        test, dev = self.data
        return [self._cosines(test, texts, vectors), self._cosines(dev, texts, vectors)]

    def score(
        self, texts: list[str], vectors: np.ndarray, context: Mapping[str, Any] | None = None
    ) -> dict[str, float]:
        return self.score_pairs(self._pair_scores(texts, vectors))

    def items(self, texts: list[str], vectors: np.ndarray) -> Items:
        return self.pair_items(self._pair_scores(texts, vectors))

    def score_and_items(self, texts: list[str], vectors: np.ndarray) -> tuple[dict[str, float], Items]:
        scores = self._pair_scores(texts, vectors)  # the cosines once for both
        return self.score_pairs(scores), self.pair_items(scores)

    def pair_items(self, scores: list[np.ndarray]) -> Items:
        """The test pairs, each right or wrong at the threshold chosen on the dev pairs (held fixed:
        a fitted value, not resampled): accuracy of the resampled test pairs."""
        test, dev = self.data
        threshold, _ = best_threshold(scores[1], dev.labels)
        right = (np.asarray(scores[0]) >= threshold) == test.labels
        return Items(len(right), ("accuracy",), lambda i: right[i].mean(axis=-1)[None], "test pairs")

    def training_pairs(self) -> PairTargets:
        test, _ = self.data
        return PairTargets(
            list(test.questions1),
            list(test.questions2),
            test.labels.astype(np.float64),
            "binary",
            list(range(1, len(test.labels) + 1)),
        )

    def pair_parts(self) -> list[tuple[list[str], list[str]]]:
        test, dev = self.data
        return [(list(test.questions1), list(test.questions2)), (list(dev.questions1), list(dev.questions2))]

    def score_pairs(self, scores: list[np.ndarray]) -> dict[str, float]:
        test, dev = self.data
        threshold, dev_accuracy = best_threshold(scores[1], dev.labels)
        predicted = np.asarray(scores[0]) >= threshold
        return {
            "accuracy": float(np.mean(predicted == test.labels)),
            "threshold": threshold,
            "dev_accuracy": dev_accuracy,
            "n_pairs": float(len(test.labels)),
            "n_dev_pairs": float(len(dev.labels)),
        }
