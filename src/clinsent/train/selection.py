"""The papers' step-selection protocol (:class:`Selection`): the curve sets are scored every
``eval_every`` steps (and at the last), each point joins the curve (with its bootstrap band), the
live curve file and the trackers, and the step with the best selection-set headline metric is
kept as the saved model (MED-SE section 4.4). Step 0 is logged for the curve but not selectable,
except where it is the only step (untrained methods).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from clinsent.evaluation.bootstrap import Items
from clinsent.models.encoder import Encoder
from clinsent.tasks.base import Task
from clinsent.train import checkpoint as ckpt
from clinsent.train.tracking import LiveCurve, Trackers


def curve_scores(
    encoder: Encoder, eval_sets: Mapping[str, Task], batch_size: int, max_length: int | None = None
) -> dict[str, tuple[float, float, float]]:
    """Each curve set's headline score and its 95% bootstrap interval over the set's items (NaN
    bounds for a task without items), the texts truncated to ``max_length`` (the evaluation length)."""
    scores = {}
    for name, task in eval_sets.items():
        texts = task.texts()
        score, items = task.curve_score_and_items(texts, encoder.encode(texts, batch_size, max_length))
        scores[name] = (score, *curve_interval(items, task.headline))
    return scores


def curve_interval(items: Items | None, headline: str) -> tuple[float, float]:
    """The curve band: the headline's bootstrap interval with :data:`CURVE_RESAMPLES` resamples
    (the evaluate jobs' seed), where the task has items that score it; else NaN bounds."""
    from clinsent.evaluation.bootstrap import CURVE_RESAMPLES, SEED, bootstrap_items

    if items is None or headline not in items.names:
        return float("nan"), float("nan")
    return bootstrap_items(items, SEED, resamples=CURVE_RESAMPLES).intervals[headline]


def save_model(st_model: Any, out_dir: Path) -> None:
    """Save the model whole or not at all (:func:`clinsent.io.files.atomic_folder`)."""
    from clinsent.io.files import atomic_folder
    from clinsent.safety.places import inside

    inside(out_dir, out_dir.parent)  # the folder replaced is the output itself, not one reached through a name
    with atomic_folder(out_dir) as staged:
        st_model.save(str(staged))


class Selection:
    """The curve and the selected step of one job: called at every evaluation point."""

    def __init__(
        self,
        encoder: Encoder,
        st_model: Any,
        eval_sets: Mapping[str, Task],
        selection_set: str | None,
        settings: Any,
        evaluated_at: int,
        work: Path,
        curve: list[dict[str, Any]],
        best: tuple[float, int] | None,
        trackers: Trackers,
        log: Callable[[str], Any],
        trained: bool,
    ) -> None:
        self.encoder, self.st_model, self.eval_sets, self.selection_set = encoder, st_model, eval_sets, selection_set
        self.batch_size, self.evaluated_at = settings.eval_batch_size, evaluated_at
        self.work, self.trained = work, trained
        self.curve, self.trackers, self.log = curve, trackers, log
        self.live = LiveCurve(work, curve)
        self.headline = {name: task.headline for name, task in eval_sets.items()}
        self.best_score, self.best_step = best if best else (-np.inf, 0)
        self.seconds = 0.0

    def __call__(self, step: int, losses: dict[str, float]) -> None:
        t0 = time.perf_counter()
        banded = curve_scores(self.encoder, self.eval_sets, self.batch_size, self.evaluated_at)
        scores = {name: value for name, (value, _, _) in banded.items()}
        self._append(step, banded, losses)
        self.trackers.scalars(step, {f"eval/{name}/{self.headline[name]}": value for name, value in scores.items()})
        # before the first step there is no loss to show; losses in significant digits (a small one is not 0.0000)
        shown = [f"{k} {self.headline[k]}={v:.4f}" for k, v in scores.items()] + [
            f"{k}={v:.4g}" for k, v in losses.items() if not math.isnan(v)
        ]
        if shown:  # step 0 without a curve set has nothing to show
            self.log(f"step {step}: " + ", ".join(shown))
        self._select(step, scores)
        self.seconds += time.perf_counter() - t0

    def _append(self, step: int, banded: Mapping[str, tuple[float, float, float]], losses: dict[str, float]) -> None:
        rows = [
            {
                "step": step,
                "eval_set": name,
                "metric": self.headline[name],
                "score": value,
                "score_low": low,
                "score_high": high,
                **losses,
            }
            for name, (value, low, high) in banded.items()
        ]
        # nothing to evaluate: the curve keeps the loss
        rows = rows or [{"step": step, "eval_set": "", "metric": "", "score": float("nan"), **losses}]
        self.curve.extend(rows)
        self.live.append(rows)

    def _select(self, step: int, scores: Mapping[str, float]) -> None:
        """Keep this step's model where it beats the best so far (no selection set: the last)."""
        if self.selection_set is None:
            self.best_step = step
        elif (step > 0 or not self.trained) and scores[self.selection_set] > self.best_score:
            self.best_score, self.best_step = scores[self.selection_set], step
            save_model(self.st_model, self.work / ckpt.BEST)
            ckpt.write_best(self.work, self.best_score, self.best_step)
