"""Fine-tune a trained encoder with a two-layer classification head on one document task (the
healthcare-LM paper's fine-tuned setting, Table 3; k layers frozen, Figure 4; few-shot,
Figure 3 and Table 16): the model is loaded as a user would (``SentenceTransformer(path)``, its
saved pooling), the head (:class:`clinsent.models.heads.ClassificationHead`) sits on the
sentence embedding, cross-entropy, the shared loop (:func:`clinsent.finetune.fit.fit`), the test
split scored after every epoch and the best epoch reported (the paper's protocol; validation
and test are the task's test split).

``freeze_layers`` k freezes the embedding layer and the first k transformer layers (k = the
depth freezes the whole encoder); ``frozen: true`` is the whole encoder, where the documents
are embedded once and only the head trains (the task's own zero-shot path computes the same).
``per_class`` draws n training documents per class with the job's seed (``draw_seed``: with that
seed in every job, so that every model and seed trains on the same documents).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from clinsent.errors import InputError
from clinsent.evaluation.classification import classification_items, classification_metrics
from clinsent.finetune.config import FinetuneSettings
from clinsent.finetune.fit import Evaluation, FitResult, fit
from clinsent.models.heads import ClassificationHead


def transformer_layers(model: Any) -> torch.nn.ModuleList:
    """The stack of transformer layers of a Hugging Face encoder (BERT, RoBERTa: encoder.layer;
    DistilBERT: transformer.layer), found by its length, not by the architecture's name."""
    depth = model.config.num_hidden_layers
    for module in model.modules():
        if isinstance(module, torch.nn.ModuleList) and len(module) == depth:
            return module
    raise ValueError(f"no stack of {depth} layers in {type(model).__name__}")


def freeze(model: Any, layers: int) -> int:
    """Freeze the embedding layer and the first ``layers`` layers; returns the trainable count."""
    stack = transformer_layers(model)
    if layers > len(stack):
        raise InputError(
            "finetune: freeze_layers", f"{layers} exceeds the model's {len(stack)} layers", f"use 0..{len(stack)}"
        )
    if layers > 0:
        for p in model.get_input_embeddings().parameters():
            p.requires_grad_(False)
        emb = getattr(model, "embeddings", None)
        for p in emb.parameters() if emb is not None else []:
            p.requires_grad_(False)
        for layer in stack[:layers]:
            for p in layer.parameters():
                p.requires_grad_(False)
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def finetune_classifier(
    model: Any, task: Any, s: FinetuneSettings, seed: int, log: Callable[[str], None] = print
) -> tuple[FitResult, dict[str, Any]]:
    """Returns the fit and a record: classes, training rows used, trainable parameters."""
    from sentence_transformers.util import batch_to_device

    e = task.examples(per_class=s.per_class, seed=seed if s.draw_seed is None else s.draw_seed)
    model.max_seq_length = s.max_length
    auto = model[0].auto_model
    depth = len(transformer_layers(auto))
    frozen = s.frozen or s.freeze_layers >= depth
    for p in model.parameters():
        p.requires_grad_(not frozen)
    trainable = 0 if frozen else freeze(auto, s.freeze_layers)
    head = ClassificationHead(model.get_sentence_embedding_dimension(), len(e.classes)).to(model.device)
    y = torch.as_tensor(e.train_y, dtype=torch.long)
    cache: dict[str, torch.Tensor] = {}
    if frozen:  # one pass over the documents; the head alone trains
        cache["train"] = model.encode(e.train_texts, convert_to_tensor=True, show_progress_bar=False).float()

    def embed(texts: list[str]) -> torch.Tensor:
        features = batch_to_device(model.preprocess(texts), model.device)
        return model(features)["sentence_embedding"].float()

    def step(idx: list[int]) -> torch.Tensor:
        x = cache["train"][idx] if frozen else embed([e.train_texts[i] for i in idx])
        return torch.nn.functional.cross_entropy(head(x), y[idx].to(model.device))

    def evaluate() -> Evaluation:
        x = model.encode(e.test_texts, convert_to_tensor=True, show_progress_bar=False).float()
        proba = torch.softmax(head(x), dim=1).cpu().numpy()
        metrics = classification_metrics(np.asarray(e.test_y), proba, len(e.classes))
        return metrics, metrics, classification_items(np.asarray(e.test_y), proba, len(e.classes))

    def set_train(on: bool) -> None:
        model.train(on and not frozen)
        head.train(on)

    params = [p for p in [*model.parameters(), *head.parameters()] if p.requires_grad]
    result = fit(len(e.train_texts), s, seed, params, step, evaluate, task.headline, set_train, log, texts_per_row=1)
    record = {
        "classes": e.classes,
        "train_rows": e.train_rows,
        "trainable_parameters": trainable + sum(p.numel() for p in head.parameters()),
        "frozen": frozen,
    }
    return result, record
