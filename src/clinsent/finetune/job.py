"""One fine-tune job (a bi-encoder run or a cross-encoder, on one ``finetune`` entry and seed):
its result file holds the test metrics of the epoch picked on validation (``metrics``, what
``summary.csv`` reads), every epoch's figures, throughput, and the record of the pairs used
(1-based pair numbers of each split: the seeded ClinicalSTS 80/20 split among them)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import torch

from clinsent.finetune.config import FinetuneSettings
from clinsent.finetune.fit import PairJob
from clinsent.gpu.hardware import describe, hardware_record
from clinsent.optimisation import pick_device, seed_everything
from clinsent.tasks.base import Task


def run_finetune(
    kind: str,
    model_path: str,
    tasks: Mapping[str, Task],
    s: FinetuneSettings,
    seed: int,
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """``kind``: bi_encoder (``model_path``: a trained model) or cross_encoder (a base model);
    ``tasks``: train, validation and test."""
    device = str(pick_device())
    log(describe(_record(device, s)))
    seed_everything(seed)  # the cross-encoder's new head and dropout draw from it
    train, validation, test = tasks["train"], tasks["validation"], tasks["test"]
    if kind not in PAIR_FITS:
        raise ValueError(f"unknown fine-tune kind {kind!r}; use one of {', '.join(PAIR_FITS)}")
    # a document or token task: a classifier on the trained encoder (cross-encoders are pair-task entries only)
    if train.doc_training or train.token_training:
        return (_classifier if train.doc_training else _token_classifier)(model_path, train, s, seed, device, log)
    result, pairs = PAIR_FITS[kind](model_path, device, PairJob(train, validation, test, s, seed, log))
    best = result.best()
    log(
        f"best epoch {result.best_epoch}: test {test.headline} {best['test'][test.headline]:.4f} "
        f"({len(pairs.targets)} training pairs, {result.sentences_per_s:.1f} sentences/s on {device})"
    )
    return {
        "kind": kind,
        **_record(device, s),
        "best_epoch": result.best_epoch,
        "metrics": result.best_metrics(),
        "validation": best["validation"],
        "epochs": result.epochs,
        "train_pairs": len(pairs.targets),
        "sentences_per_s": result.sentences_per_s,
        "pairs_used": {"train": pairs.rows, "validation": validation.training_pairs().rows},
    }  # one task: both have pairs


def _record(device: str, s: FinetuneSettings) -> dict[str, Any]:
    """The hardware and software the job ran on, with the entry's precision on that device."""
    from clinsent.gpu.precision import resolve

    return hardware_record(torch.device(device), resolve(s.precision, torch.device(device)))


def _bi_encoder(model_path: str, device: str, job: PairJob) -> tuple[Any, Any]:
    from clinsent.embedding.vectors import load_model
    from clinsent.finetune.bi_encoder import finetune_bi_encoder

    return finetune_bi_encoder(load_model(model_path, device), job)


def _cross_encoder(model_path: str, device: str, job: PairJob) -> tuple[Any, Any]:
    from clinsent.finetune.cross_encoder import finetune_cross_encoder, load_cross_encoder

    return finetune_cross_encoder(load_cross_encoder(model_path, job.s.max_length, device), job)


# the fine-tune rule's kind -> how it fits a pair task: the trained bi-encoder, or a cross-encoder from the base model
PAIR_FITS: dict[str, Callable[..., tuple[Any, Any]]] = {"bi_encoder": _bi_encoder, "cross_encoder": _cross_encoder}


def _classifier(
    model_path: str, task: Task, s: FinetuneSettings, seed: int, device: str, log: Callable[[str], None]
) -> dict[str, Any]:
    from clinsent.embedding.vectors import load_model
    from clinsent.finetune.classifier import finetune_classifier

    result, record = finetune_classifier(load_model(model_path, device), task, s, seed, log)
    best = result.best()
    log(
        f"best epoch {result.best_epoch}: test {task.headline} {best['test'][task.headline]:.4f} "
        f"({len(record['train_rows'])} training documents, {result.sentences_per_s:.1f} documents/s on {device})"
    )
    return {
        "kind": "classifier",
        **_record(device, s),
        "best_epoch": result.best_epoch,
        "metrics": result.best_metrics(),
        "epochs": result.epochs,
        "train_documents": len(record["train_rows"]),
        "documents_per_s": result.sentences_per_s,
        **record,
    }


def _token_classifier(
    model_path: str, task: Task, s: FinetuneSettings, seed: int, device: str, log: Callable[[str], None]
) -> dict[str, Any]:
    from clinsent.finetune.token_classifier import finetune_token_classifier

    result, record = finetune_token_classifier(model_path, task, s, seed, device, log)
    best = result.best()
    log(
        f"best epoch {result.best_epoch}: test {task.headline} {best['test'][task.headline]:.4f} "
        f"({record['train_sentences']} training sentences, {result.sentences_per_s:.1f} sentences/s on {device})"
    )
    return {
        "kind": "token_classifier",
        **_record(device, s),
        "best_epoch": result.best_epoch,
        "metrics": result.best_metrics(),
        "epochs": result.epochs,
        "sentences_per_s": result.sentences_per_s,
        **record,
    }


def job_from_params(
    kind: str, model_path: str, params: Mapping[str, Any], seed: int, threads: int, log: Callable[[str], None] = print
) -> dict[str, Any]:
    """Rebuild the entry and its three tasks from a rule's params (already validated) and run it."""
    from clinsent.config.declare import build
    from clinsent.tasks.config import task_from_params

    torch.set_num_threads(threads)
    s = build(FinetuneSettings, params["settings"])
    tasks = {role: task_from_params(getattr(s, role), p) for role, p in params["eval_sets"].items()}
    return run_finetune(kind, model_path, tasks, s, seed, log)
