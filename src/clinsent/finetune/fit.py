"""The fine-tuning loop shared by bi-encoders and cross-encoders: seeded shuffles per epoch,
AdamW with linear warm-up and decay (``transformers.get_linear_schedule_with_warmup``), the
gradient norm clipped to 1, and after every epoch the validation and test metrics; the epoch
with the best validation headline is reported (ties: the earlier epoch).

Why our own loop rather than sentence-transformers' trainers: they need ``datasets`` and
``accelerate`` (not installed here) and evaluate through their own evaluators, while the
tables need our tasks' metrics (RQE's dev-tuned threshold, the recorded validation split)
after every epoch. The losses are sentence-transformers' own modules.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from clinsent.finetune.config import FinetuneSettings


@dataclass
class FitResult:
    epochs: list[dict[str, Any]] = field(default_factory=list)  # per epoch: loss, validation, test metrics
    best_epoch: int = 0
    sentences_per_s: float = 0.0

    def best(self) -> dict[str, Any]:
        return self.epochs[self.best_epoch - 1]


def fit(n: int, s: FinetuneSettings, seed: int, parameters: list[torch.nn.Parameter],
        step: Callable[[list[int]], torch.Tensor],
        evaluate: Callable[[], tuple[dict[str, float], dict[str, float]]], headline: str,
        set_train: Callable[[bool], None], log: Callable[[str], None] = print,
        texts_per_row: int = 2) -> FitResult:
    """``n`` training rows (pairs, documents); ``step(rows)`` returns the loss of those rows;
    ``evaluate()`` returns (validation metrics, test metrics) with the model in eval mode.
    The best epoch is the one with the best finite validation headline (NaN never wins; when
    every epoch is NaN, the last)."""
    from transformers import get_linear_schedule_with_warmup

    if n == 0:
        raise ValueError("no training rows")
    per_epoch = math.ceil(n / s.batch_size)
    total = per_epoch * s.epochs
    optimizer = torch.optim.AdamW(parameters, lr=s.learning_rate, weight_decay=s.weight_decay)
    scheduler = get_linear_schedule_with_warmup(optimizer, int(round(s.warmup_ratio * total)), total)
    result, best, seen, busy = FitResult(), -math.inf, 0, 0.0
    for epoch in range(1, s.epochs + 1):
        set_train(True)
        order = np.random.default_rng([seed, epoch]).permutation(n)
        losses = []
        for k in range(per_epoch):
            idx = order[k * s.batch_size:(k + 1) * s.batch_size].tolist()
            t0 = time.perf_counter()
            loss = step(idx)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(parameters, 1.0)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
            busy += time.perf_counter() - t0
            seen += texts_per_row * len(idx)
            losses.append(float(loss.detach()))
        set_train(False)
        with torch.no_grad():
            validation, test = evaluate()
        result.epochs.append({"epoch": epoch, "loss": float(np.mean(losses)), "validation": validation, "test": test})
        score = float(validation[headline])
        log(f"epoch {epoch}/{s.epochs}: loss {np.mean(losses):.4f}, validation {headline} {score:.4f}, "
            f"{seen / max(busy, 1e-9):.1f} sentences/s")
        if score > best:  # NaN compares False
            best, result.best_epoch = score, epoch
    result.sentences_per_s = seen / max(busy, 1e-9)
    return result
