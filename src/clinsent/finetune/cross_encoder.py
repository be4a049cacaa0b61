"""The cross-encoder baseline (BioSimCSE Table 2): sentence-transformers' ``CrossEncoder`` (a
base model with a one-logit classification head over the pair) fine-tuned per task with
binary cross-entropy on the targets in [0, 1] (STS: gold / scale, as sentence-transformers'
STS cross-encoder example; RQE: 0 or 1), through the library's ``BinaryCrossEntropyLoss``.
Its sigmoid scores are ranked (STS) or thresholded on dev (RQE) by the task itself."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from clinsent.evaluation.bootstrap import Items
from clinsent.finetune.fit import FitResult, PairJob, fit_pairs
from clinsent.tasks.base import PairTargets, Task


def load_cross_encoder(path: str, max_length: int, device: str) -> Any:
    from sentence_transformers.cross_encoder import CrossEncoder

    return CrossEncoder(path, num_labels=1, max_length=max_length, device=device, local_files_only=True)


def predict_and_score(model: Any, task: Task, batch_size: int = 64) -> tuple[dict[str, float], Items | None]:
    """The task's metrics on the cross-encoder's pair scores, and its items (for the intervals)."""
    scores = [
        np.asarray(
            model.predict(
                list(zip(a, b, strict=True)), batch_size=batch_size, convert_to_numpy=True, show_progress_bar=False
            ),
            dtype=np.float64,
        ).reshape(-1)
        for a, b in task.pair_parts()
    ]
    return task.score_pairs(scores), task.pair_items(scores)


def finetune_cross_encoder(model: Any, job: PairJob) -> tuple[FitResult, PairTargets]:
    from sentence_transformers.cross_encoder.losses import BinaryCrossEntropyLoss

    pairs = job.train.training_pairs()
    loss = BinaryCrossEntropyLoss(model)

    targets = torch.as_tensor(pairs.targets, dtype=torch.float32)

    def step(idx: list[int]) -> torch.Tensor:
        return loss([[pairs.texts1[i] for i in idx], [pairs.texts2[i] for i in idx]], targets[idx].to(model.device))

    return fit_pairs(model, loss, step, predict_and_score, job)
