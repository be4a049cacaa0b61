"""Fine-tune a trained bi-encoder on one task's pairs (BioSimCSE's fine-tuned setting): STS
regresses the cosine of the two embeddings on gold / scale (sentence-transformers'
``CosineSimilarityLoss``: MSE on the cosine), binary tasks (RQE) pull positive pairs together
and push negatives beyond a margin in cosine distance, on the batch's hard pairs only
(``OnlineContrastiveLoss``). The model is loaded as a user would, ``SentenceTransformer(path)``;
the validation and test sets are embedded and scored by their own tasks, as zero-shot."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from clinsent.evaluation.bootstrap import Items
from clinsent.finetune.fit import FitResult, PairJob, fit_pairs
from clinsent.tasks.base import PairTargets, Task


def _similarity(model: Any, margin: float) -> torch.nn.Module:
    from sentence_transformers.sentence_transformer.losses import CosineSimilarityLoss

    return CosineSimilarityLoss(model)


def _binary(model: Any, margin: float) -> torch.nn.Module:
    from sentence_transformers.sentence_transformer.losses import OnlineContrastiveLoss

    return OnlineContrastiveLoss(model, margin=margin)


# the kind of a task's training pairs (PairTargets.kind) -> sentence-transformers' loss for them
PAIR_LOSSES: dict[str, Callable[[Any, float], torch.nn.Module]] = {"similarity": _similarity, "binary": _binary}


def pair_loss(model: Any, kind: str, margin: float) -> torch.nn.Module:
    return PAIR_LOSSES[kind](model, margin)


def embed_and_score(model: Any, task: Task, batch_size: int = 64) -> tuple[dict[str, float], Items | None]:
    """The task's metrics on the model's embeddings, and its items (for the intervals)."""
    texts = task.texts()
    vectors = np.asarray(
        model.encode(texts, batch_size=batch_size, convert_to_numpy=True, show_progress_bar=False), dtype=np.float32
    )
    return task.score_and_items(texts, vectors)


def finetune_bi_encoder(model: Any, job: PairJob) -> tuple[FitResult, PairTargets]:
    from sentence_transformers.util import batch_to_device

    pairs = job.train.training_pairs()
    model.max_seq_length = job.s.max_length
    loss = pair_loss(model, pairs.kind, job.s.margin)

    targets = torch.as_tensor(pairs.targets, dtype=torch.float32)

    def step(idx: list[int]) -> torch.Tensor:
        texts = ([pairs.texts1[i] for i in idx], [pairs.texts2[i] for i in idx])
        features = [batch_to_device(model.preprocess(t), model.device) for t in texts]
        return loss(features, targets[idx].to(model.device))

    return fit_pairs(model, loss, step, embed_and_score, job)
