"""The one optimisation core shared by pre-training (:mod:`clinsent.train.trainer`), fine-tuning
(:mod:`clinsent.finetune.fit`) and the frozen-encoder head
(:func:`clinsent.evaluation.classification.train_head`).

- :func:`pick_device` and :func:`seed_everything`: CUDA when present; Python's, NumPy's and
  torch's global generators seeded together.
- :class:`Optimisation`: the optimiser (AdamW, fused on every device, or RMSprop), transformers' own
  linear schedule with warm-up (``get_linear_schedule_with_warmup``), gradient-norm clipping,
  the precision's autocast and (fp16) gradient scaler, and one :meth:`~Optimisation.step` that
  zeroes, back-propagates, clips, steps and schedules; its state goes into checkpoints.
- :func:`epoch_batches`: the seeded per-epoch shuffles of an epoch loop (row order of epoch e:
  a permutation drawn from ``default_rng([seed, e])``, so a rerun draws the same batches).
- :func:`best_index` and :func:`fit_epochs`: an epoch loop with evaluation after every epoch and
  the best epoch (ties: the earlier; NaN never wins).

The trainer's own loop stays step-driven (batch plans fix every step's rows in advance, with
prefetching, checkpoints and preemption) and takes its optimisation from here.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import torch


def pick_device() -> torch.device:
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


class Optimisation:
    """Optimiser, linear schedule with warm-up, and clipping over one parameter list.

    ``total_steps`` steps, the first ``round(warmup_ratio x total_steps)`` warming up linearly,
    then a linear decay to 0 (transformers' schedule). ``grad_clip`` 0 switches clipping off.
    ``precision`` (:mod:`clinsent.gpu.precision`) sets the autocast of :meth:`autocast` and, for fp16,
    a gradient scaler: losses are scaled before backward (:meth:`scale`), gradients unscaled
    before clipping, and a step whose gradients overflowed is skipped with its schedule step
    (``skipped`` counts them). A step is :meth:`zero_grad`, backward passes, :meth:`apply`;
    :meth:`step` does all three for one loss. ``capturable``: AdamW's state and learning rate
    live on the device, so the whole step can be captured as a CUDA graph (fp32 or bf16)."""

    def __init__(
        self,
        params: Sequence[torch.nn.Parameter],
        learning_rate: float,
        total_steps: int,
        warmup_ratio: float = 0.0,
        weight_decay: float = 0.0,
        grad_clip: float = 0.0,
        optimizer: Literal["adamw", "rmsprop"] = "adamw",
        device: torch.device | None = None,
        precision: str = "fp32",
        scaler: Any = None,
        capturable: bool = False,
    ) -> None:
        from transformers import get_linear_schedule_with_warmup

        from clinsent.gpu.precision import grad_scaler, resolve

        self.params = list(params)
        self.grad_clip = grad_clip
        self.device = device or torch.device("cpu")
        self.precision = resolve(precision, self.device)
        self.scaler = scaler if scaler is not None else grad_scaler(self.device, self.precision)
        self.skipped = 0
        if optimizer == "rmsprop":
            self.optimizer: torch.optim.Optimizer = torch.optim.RMSprop(
                self.params, lr=learning_rate, weight_decay=weight_decay
            )
        elif capturable:  # a step captured as a CUDA graph (clinsent.train.graphs): its state and
            # learning rate on the device, the schedule writing the rate into its tensor in place
            lr = torch.tensor(learning_rate, dtype=torch.float32, device=self.device)
            self.optimizer = torch.optim.AdamW(
                self.params, lr=lr, weight_decay=weight_decay, fused=True, capturable=True
            )
        else:
            # fused on every device: the for-each AdamW reads each parameter's step count on the
            # host (one `.item()`, a device sync, per parameter and step); equal within 1e-6
            self.optimizer = torch.optim.AdamW(self.params, lr=learning_rate, weight_decay=weight_decay, fused=True)
        total = max(int(total_steps), 1)
        self.scheduler = get_linear_schedule_with_warmup(self.optimizer, int(round(warmup_ratio * total_steps)), total)

    def autocast(self) -> Any:
        """The forward passes' autocast for this precision (none for fp32)."""
        from clinsent.gpu.precision import autocast

        return autocast(self.device, self.precision)

    def scale(self, loss: torch.Tensor) -> torch.Tensor:
        """``loss`` as it is back-propagated (times the scaler's factor under fp16)."""
        return self.scaler.scale(loss) if self.scaler is not None else loss

    def zero_grad(self) -> None:
        self.optimizer.zero_grad(set_to_none=True)

    def apply(self) -> bool:
        """Unscale, clip, take the optimiser and schedule step; False when the scaler found an
        overflow and skipped it."""
        if self.scaler is not None:
            self.scaler.unscale_(self.optimizer)
        if self.grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(self.params, self.grad_clip)
        if self.scaler is not None:
            before = self.scaler.get_scale()
            self.scaler.step(self.optimizer)
            self.scaler.update()
            if self.scaler.get_scale() < before:  # the scale backs off only after inf/NaN gradients
                self.skipped += 1
                return False
        else:
            self.optimizer.step()
        self.scheduler.step()
        return True

    def clip_and_step(self) -> None:
        """Clip and take the optimiser step (no scaler, no schedule step): the part of a step a
        CUDA graph captures (:mod:`clinsent.train.graphs`; the schedule steps after each replay)."""
        if self.grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(self.params, self.grad_clip)
        self.optimizer.step()

    def step(self, loss: torch.Tensor) -> None:
        """Back-propagate ``loss`` and take one optimiser and schedule step."""
        self.zero_grad()
        self.scale(loss).backward()
        self.apply()

    def state_dict(self) -> dict[str, Any]:
        state = {"optimizer": self.optimizer.state_dict(), "scheduler": self.scheduler.state_dict()}
        if self.scaler is not None:
            state["scaler"] = self.scaler.state_dict()
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
        if self.scaler is not None and "scaler" in state:
            self.scaler.load_state_dict(state["scaler"])


def epoch_batches(n: int, batch_size: int, seed: int, epoch: int) -> Iterator[list[int]]:
    """The row indices of each batch of one epoch (the last batch may be short)."""
    order = np.random.default_rng([seed, epoch]).permutation(n)
    for k in range(math.ceil(n / batch_size)):
        yield order[k * batch_size : (k + 1) * batch_size].tolist()


def best_index(scores: Sequence[float]) -> int:
    """1-based index of the best score (ties: the earlier; NaN never wins; all NaN: the first)."""
    finite = [(s, -i) for i, s in enumerate(scores) if not math.isnan(s)]
    return -max(finite)[1] + 1 if finite else 1


@dataclass
class EpochResult:
    epochs: list[dict[str, Any]] = field(default_factory=list)  # per epoch: epoch, loss, and what evaluate returned
    busy_seconds: float = 0.0  # in the training steps
    rows: int = 0  # rows trained on, over every epoch


def fit_epochs(
    n: int,
    batch_size: int,
    epochs: int,
    seed: int,
    optimisation: Optimisation,
    loss_of: Callable[[list[int]], torch.Tensor],
    evaluate: Callable[[], dict[str, Any]],
    set_train: Callable[[bool], Any],
    log: Callable[[dict[str, Any]], None] | None = None,
) -> EpochResult:
    """``epochs`` passes over ``n`` rows in seeded batches; ``loss_of(rows)`` is a batch's loss;
    after every epoch ``evaluate()`` (in eval mode, without gradient) gives that epoch's record."""
    if n == 0:
        raise ValueError("no training rows")
    result = EpochResult()
    for epoch in range(1, epochs + 1):
        set_train(True)
        losses = []
        for rows in epoch_batches(n, batch_size, seed, epoch):
            t0 = time.perf_counter()
            with optimisation.autocast():
                loss = loss_of(rows)
            optimisation.step(loss)
            result.busy_seconds += time.perf_counter() - t0
            result.rows += len(rows)
            losses.append(float(loss.detach()))
        set_train(False)
        with torch.no_grad():
            record = {"epoch": epoch, "loss": float(np.mean(losses)), **evaluate()}
        result.epochs.append(record)
        if log:
            log(record)
    return result
