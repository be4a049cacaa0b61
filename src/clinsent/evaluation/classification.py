"""Document classification metrics and the frozen-feature head (the healthcare-LM paper's
Table 3 protocol: a two-layer head trained for a few epochs, the best epoch's figures).

Metrics (scikit-learn): ``f1_macro`` (the paper's headline), ``accuracy``, ``precision_macro``,
``recall_macro`` (zero_division 0) and ``roc_auc`` (binary: of the second class's probability;
more classes: one-vs-rest, macro; NaN when the test split lacks a class, so never a made-up
figure).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from clinsent.evaluation.bootstrap import Items, rowwise_classification, rowwise_roc_auc

METRICS = ("f1_macro", "accuracy", "precision_macro", "recall_macro", "roc_auc")


def classification_metrics(y_true: np.ndarray, proba: np.ndarray, n_classes: int) -> dict[str, float]:
    """``y_true``: class indices; ``proba``: (n, n_classes) probabilities."""
    from sklearn.metrics import accuracy_score, f1_score, precision_score, recall_score, roc_auc_score

    pred = proba.argmax(axis=1)
    labels = list(range(n_classes))
    out = {
        "f1_macro": float(f1_score(y_true, pred, labels=labels, average="macro", zero_division=0)),
        "accuracy": float(accuracy_score(y_true, pred)),
        "precision_macro": float(precision_score(y_true, pred, labels=labels, average="macro", zero_division=0)),
        "recall_macro": float(recall_score(y_true, pred, labels=labels, average="macro", zero_division=0)),
    }
    present = np.unique(y_true)
    if len(present) < n_classes or n_classes < 2:
        out["roc_auc"] = math.nan
    elif n_classes == 2:
        out["roc_auc"] = float(roc_auc_score(y_true, proba[:, 1]))
    else:
        p = proba / proba.sum(axis=1, keepdims=True)
        out["roc_auc"] = float(roc_auc_score(y_true, p, multi_class="ovr", average="macro", labels=labels))
    return out


def classification_items(y_true: np.ndarray, proba: np.ndarray, n_classes: int) -> Items:
    """The test documents, each with its truth and the fitted head's probabilities (the head held
    fixed): :data:`METRICS` of each resample of them, as :func:`classification_metrics` computes
    them (macro means over every class; ``roc_auc`` NaN on a resample that lacks a class)."""
    y = np.asarray(y_true, dtype=np.int64)
    pred = proba.argmax(axis=1)
    p = proba / proba.sum(axis=1, keepdims=True)

    def statistic(idx: np.ndarray) -> np.ndarray:
        got = rowwise_classification(y, pred, idx, n_classes, every_class=True)
        if n_classes < 2:
            auc = np.full(idx.shape[0], np.nan)
        elif n_classes == 2:
            auc = rowwise_roc_auc(y == 1, proba[:, 1], idx)
        else:  # one-vs-rest, the macro mean; NaN when a resample lacks a class (as the full metric)
            auc = np.mean([rowwise_roc_auc(y == c, p[:, c], idx) for c in range(n_classes)], axis=0)
        return np.stack([got["macro_f1"], got["accuracy"], got["macro_precision"], got["macro_recall"], auc])

    return Items(len(y), METRICS, statistic, "test documents")


def few_shot(labels: np.ndarray, per_class: int, seed: int, where: str) -> np.ndarray:
    """Indices of ``per_class`` rows of each class (seeded); a class with fewer rows is an error."""
    from clinsent.errors import InputError

    rng = np.random.default_rng(seed)
    picked = []
    for c in sorted(set(labels.tolist())):
        idx = np.flatnonzero(labels == c)
        if len(idx) < per_class:
            raise InputError(
                where,
                f"class {c!r} has {len(idx)} training rows, fewer than per_class {per_class}",
                "lower per_class, or drop the setting for this task",
            )
        picked.append(rng.permutation(idx)[:per_class])
    return np.sort(np.concatenate(picked))


def best_epoch(epochs: Sequence[dict[str, Any]], headline: str = "f1_macro") -> int:
    """1-based epoch with the best test headline (ties: the earlier; NaN never wins)."""
    from clinsent.optimisation import best_index

    return best_index([e["test"][headline] for e in epochs])


def train_head(
    x_train: np.ndarray,
    y_train: np.ndarray,
    x_test: np.ndarray,
    y_test: np.ndarray,
    n_classes: int,
    epochs: int,
    learning_rate: float,
    batch_size: int,
    seed: int,
    hidden: int | None = None,
    dropout: float = 0.1,
    log: Callable[[str], Any] | None = None,
) -> tuple[list[dict[str, Any]], list[np.ndarray]]:
    """Train the two-layer head on frozen features (AdamW with its default weight decay 0.01,
    linear warm-up 10% and decay, no clipping: the training core, :mod:`clinsent.optimisation`),
    scoring the test split after every epoch; returns one record per epoch and each epoch's test
    probabilities (for the best epoch's intervals: :func:`classification_items`)."""
    import torch  # here, not at import: every evaluate job imports the task registry

    from clinsent.models.heads import ClassificationHead
    from clinsent.optimisation import Optimisation, fit_epochs

    torch.manual_seed(seed)
    head = ClassificationHead(x_train.shape[1], n_classes, hidden, dropout)
    xt = torch.as_tensor(x_train, dtype=torch.float32)
    yt = torch.as_tensor(y_train, dtype=torch.long)
    xs = torch.as_tensor(x_test, dtype=torch.float32)
    optimisation = Optimisation(
        list(head.parameters()),
        learning_rate,
        math.ceil(len(xt) / batch_size) * epochs,
        warmup_ratio=0.1,
        weight_decay=0.01,
    )

    def loss_of(rows: list[int]) -> torch.Tensor:
        idx = torch.as_tensor(rows)
        return torch.nn.functional.cross_entropy(head(xt[idx]), yt[idx])

    probas: list[np.ndarray] = []

    def scored() -> dict[str, Any]:
        probas.append(torch.softmax(head(xs), dim=1).numpy())
        return {"test": classification_metrics(y_test, probas[-1], n_classes)}

    def report(record: dict[str, Any]) -> None:
        if log:
            log(f"epoch {record['epoch']}: loss {record['loss']:.4f}, test f1_macro {record['test']['f1_macro']:.4f}")

    return fit_epochs(
        len(xt), batch_size, epochs, seed, optimisation, loss_of, scored, head.train, report
    ).epochs, probas
