"""Fine-tune a trained encoder for token classification (the healthcare-LM paper's Table 10):
transformers' ``AutoModelForTokenClassification`` from the run's saved model folder (the
encoder as trained, a new linear layer over the BIO tags of the training file), each word's
tag predicted at its first sub-token (the other sub-tokens are not scored, -100), sentences
longer than ``max_length`` tokens truncated (their cut words are predicted O, which counts
against recall; the number is recorded). ``frozen: true``: only the linear layer trains (the
paper's frozen rows); ``freeze_layers`` k freezes the embeddings and the first k layers. The
shared loop (:func:`clinsent.finetune.fit.fit`) scores the test file after every epoch with
entity-level micro F1; the best epoch is reported, as for the document tasks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from clinsent.evaluation.conll import TaggedSentence, entity_items, entity_scores
from clinsent.finetune.classifier import freeze, transformer_layers
from clinsent.finetune.config import FinetuneSettings
from clinsent.finetune.fit import Evaluation, FitResult, fit


def encode_words(
    tokenizer: Any, sentences: list[TaggedSentence], label_ids: dict[str, int] | None, max_length: int
) -> tuple[dict[str, torch.Tensor], list[list[int]]]:
    """Features of ``sentences`` (words pre-split) with labels at each word's first sub-token
    (``label_ids`` None: no labels), and per sentence the token index of each word (-1: cut)."""
    enc = tokenizer(
        [s.tokens for s in sentences],
        is_split_into_words=True,
        truncation=True,
        max_length=max_length,
        padding=True,
        return_tensors="pt",
    )
    firsts: list[list[int]] = []
    labels = torch.full(enc["input_ids"].shape, -100, dtype=torch.long)
    for b, s in enumerate(sentences):
        where = [-1] * len(s.tokens)
        previous = None
        for t, w in enumerate(enc.word_ids(b)):
            if w is not None and w != previous:
                where[w] = t
                if label_ids is not None:
                    labels[b, t] = label_ids.get(s.tags[w], 0)
            previous = w
        firsts.append(where)
    features = dict(enc)
    if label_ids is not None:
        features["labels"] = labels
    return features, firsts


def finetune_token_classifier(
    model_path: str, task: Any, s: FinetuneSettings, seed: int, device: str, log: Callable[[str], None] = print
) -> tuple[FitResult, dict[str, Any]]:
    from transformers import AutoModelForTokenClassification, AutoTokenizer

    from clinsent.models.complete import check_complete

    splits = task.data
    labels = splits.labels()
    ids = {t: i for i, t in enumerate(labels)}
    check_complete(model_path, "model")
    tokenizer = AutoTokenizer.from_pretrained(model_path)
    model = AutoModelForTokenClassification.from_pretrained(
        model_path, num_labels=len(labels), id2label=dict(enumerate(labels)), label2id=ids
    ).to(device)
    base = getattr(model, model.base_model_prefix)
    depth = len(transformer_layers(base))
    frozen = s.frozen or s.freeze_layers >= depth
    for p in base.parameters():
        p.requires_grad_(not frozen)
    if not frozen:
        freeze(base, s.freeze_layers)
    train = splits.train
    test_features, test_firsts = encode_words(tokenizer, splits.test, None, s.max_length)
    cut = sum(w < 0 for f in test_firsts for w in f)

    def step(idx: list[int]) -> torch.Tensor:
        features, _ = encode_words(tokenizer, [train[i] for i in idx], ids, s.max_length)
        return model(**{k: v.to(device) for k, v in features.items()}).loss

    def evaluate() -> Evaluation:
        predicted: list[list[str]] = []
        for k in range(0, len(splits.test), 64):
            batch = {key: v[k : k + 64].to(device) for key, v in test_features.items()}
            best = model(**batch).logits.argmax(-1).cpu().numpy()
            for row, where in zip(best, test_firsts[k : k + 64]):
                predicted.append([labels[int(row[t])] if t >= 0 else "O" for t in where])
        gold = [x.tags for x in splits.test]
        scores = entity_scores(gold, predicted)
        return scores, scores, entity_items(gold, predicted)

    params = [p for p in model.parameters() if p.requires_grad]
    result = fit(len(train), s, seed, params, step, evaluate, task.headline, model.train, log, texts_per_row=1)
    record = {
        "labels": labels,
        "train_sentences": len(train),
        "test_sentences": len(splits.test),
        "test_words": int(sum(len(x.tokens) for x in splits.test)),
        "test_words_cut": int(cut),
        "frozen": frozen,
        "trainable_parameters": int(sum(p.numel() for p in params)),
    }
    return result, record
