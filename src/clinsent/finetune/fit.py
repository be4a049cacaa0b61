"""The fine-tuning loop shared by bi-encoders, cross-encoders and the document and token
classifiers, on the training core (:mod:`clinsent.optimisation`): seeded shuffles per epoch,
AdamW with linear warm-up and decay (transformers' schedule), the gradient norm clipped to 1,
and after every epoch the validation and test metrics; the epoch with the best validation
headline is reported (ties: the earlier epoch).

Why our own loop rather than sentence-transformers' trainers: they need ``datasets`` and
``accelerate`` (not installed here) and evaluate through their own evaluators, while the
tables need our tasks' metrics (RQE's dev-tuned threshold, the recorded validation split)
after every epoch. The losses are sentence-transformers' own modules.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from clinsent.evaluation.bootstrap import Items
from clinsent.finetune.config import FinetuneSettings
from clinsent.tasks.base import PairTargets, Task

# what a fine-tune's evaluate() returns: validation metrics, test metrics, and the test items
# (for the intervals of the reported epoch; None: the task has none)
Evaluation = tuple[dict[str, float], dict[str, float], Items | None]


@dataclass
class FitResult:
    epochs: list[dict[str, Any]] = field(default_factory=list)  # per epoch: loss, validation, test metrics
    best_epoch: int = 0
    sentences_per_s: float = 0.0
    test_items: list[Items | None] = field(default_factory=list)  # per epoch (not written: predictions)

    def best(self) -> dict[str, Any]:
        return self.epochs[self.best_epoch - 1]

    def best_metrics(self) -> dict[str, Any]:
        """The reported epoch's test metrics with their 95% intervals over the test items
        (:func:`clinsent.evaluation.bootstrap.interval_record`), what ``summary.csv`` reads."""
        from clinsent.evaluation.bootstrap import interval_record

        return {**self.best()["test"], **interval_record(self.test_items[self.best_epoch - 1])}


def fit(
    n: int,
    s: FinetuneSettings,
    seed: int,
    parameters: list[torch.nn.Parameter],
    step: Callable[[list[int]], torch.Tensor],
    evaluate: Callable[[], Evaluation],
    headline: str,
    set_train: Callable[[bool], None],
    log: Callable[[str], None] = print,
    texts_per_row: int = 2,
) -> FitResult:
    """``n`` training rows (pairs, documents); ``step(rows)`` returns the loss of those rows (run
    under the entry's ``precision``: autocast, and a gradient scaler for fp16);
    ``evaluate()`` returns (validation metrics, test metrics, test items) with the model in eval mode.
    The best epoch is the one with the best finite validation headline (NaN never wins; when
    every epoch is NaN, ``best_epoch`` stays 0 and ``best()`` is the last)."""
    from clinsent.optimisation import Optimisation, fit_epochs

    if n == 0:
        raise ValueError("no training rows")
    device = parameters[0].device if parameters else torch.device("cpu")
    optimisation = Optimisation(
        parameters,
        s.learning_rate,
        math.ceil(n / s.batch_size) * s.epochs,
        warmup_ratio=s.warmup_ratio,
        weight_decay=s.weight_decay,
        grad_clip=1.0,
        device=device,
        precision=s.precision,
    )
    result, best = FitResult(), -math.inf

    def scored() -> dict[str, Any]:
        validation, test, items = evaluate()
        result.test_items.append(items)
        return {"validation": validation, "test": test}

    def report(record: dict[str, Any]) -> None:
        nonlocal best
        score = float(record["validation"][headline])
        log(f"epoch {record['epoch']}/{s.epochs}: loss {record['loss']:.4f}, validation {headline} {score:.4f}")
        if score > best:  # NaN compares False
            best, result.best_epoch = score, record["epoch"]

    run = fit_epochs(n, s.batch_size, s.epochs, seed, optimisation, step, scored, set_train, report)
    result.epochs = run.epochs
    result.sentences_per_s = texts_per_row * run.rows / max(run.busy_seconds, 1e-9)
    return result


Score = Callable[[Any, Task], tuple[dict[str, float], Items | None]]


@dataclass(frozen=True)
class PairJob:
    """A pair task's fine-tuning, whatever the model (a bi-encoder or a cross-encoder): the
    task's three splits, the entry's settings, the seed and where progress goes."""

    train: Task
    validation: Task
    test: Task
    s: FinetuneSettings
    seed: int
    log: Callable[[str], None] = print


def fit_pairs(
    model: Any, loss: torch.nn.Module, step: Callable[[list[int]], torch.Tensor], score: Score, job: PairJob
) -> tuple[FitResult, PairTargets]:
    """:func:`fit` on the training split's pairs (a bi-encoder's or a cross-encoder's ``loss``,
    its trainable parameters), each epoch scored by ``score(model, task)`` on the validation
    split (the epoch's pick) and the test split (reported, with its items for the intervals)."""
    pairs = job.train.training_pairs()

    def evaluate() -> Evaluation:
        return (score(model, job.validation)[0], *score(model, job.test))

    trainable = [p for p in loss.parameters() if p.requires_grad]
    headline = job.validation.headline
    result = fit(len(pairs.targets), job.s, job.seed, trainable, step, evaluate, headline, model.train, job.log)
    return result, pairs
