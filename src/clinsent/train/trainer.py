"""The training loop for the contrastive objectives, with the papers' step-selection protocol.

Every ``eval_every`` steps (and at the last step) the encoder embeds every eval set, the
Spearman of each is logged, and the step with the best Spearman on the selection set is kept
as the saved model (MED-SE section 4.4). Step 0 is logged for the curve but not selectable,
except where it is the only step (``objective: none``, or ``steps: 0``).

Why a custom loop rather than sentence-transformers' trainer: MED-SE needs the token states
of the same forward pass as the sentence embedding, entity spans and definitions per row, a
second encoder, and batches fixed in advance by the batch plan (the stock trainer reshuffles
rows and its collator drops non-text columns). Sentence-transformers still provides the model
modules, the tokenizer and the saved model format.
"""

from __future__ import annotations

import copy
import random
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from clinsent.evaluation.evaluate import pair_vectors
from clinsent.evaluation.metrics import cosine_rows, spearman
from clinsent.evaluation.sts_data import StsSet
from clinsent.losses.contrastive import info_nce
from clinsent.losses.medse import medse_loss
from clinsent.models.base import load_transformer, sentence_transformer
from clinsent.models.entity_encoder import EntityEncoder
from clinsent.models.pooling import pool
from clinsent.train.settings import OBJECTIVES, TrainSettings
from clinsent.train.spans import span_token_mask

CURVE_COLUMNS = ["step", "eval_set", "spearman", "loss", "loss_sentence", "loss_entity"]


@dataclass
class TrainResult:
    curve: pd.DataFrame
    selected_step: int
    selection_spearman: float
    info: dict[str, Any]


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def pick_device() -> torch.device:
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Encoder:
    """A Hugging Face encoder with its tokenizer and a pooling."""

    def __init__(self, model: Any, tokenizer: Any, pooling: str, first_layer: int, max_length: int,
                 device: torch.device) -> None:
        self.model, self.tokenizer = model, tokenizer
        self.pooling, self.first_layer, self.max_length, self.device = pooling, first_layer, max_length, device

    def tokenize(self, texts: list[str], offsets: bool = False) -> dict[str, torch.Tensor]:
        return dict(self.tokenizer(texts, padding=True, truncation=True, max_length=self.max_length,
                                   return_tensors="pt", return_offsets_mapping=offsets))

    def hidden_states(self, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, ...]:
        inputs = {k: v.to(self.device) for k, v in batch.items() if k != "offset_mapping"}
        with _autocast(self.device):
            out = self.model(**inputs, output_hidden_states=True, return_dict=True)
        return tuple(h.float() for h in out.hidden_states)

    def embed_batch(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        hs = self.hidden_states(batch)
        return pool(hs, batch["attention_mask"].to(self.device), self.pooling, self.first_layer)

    @torch.no_grad()
    def encode(self, texts: list[str], batch_size: int = 64) -> np.ndarray:
        was_training = self.model.training
        self.model.eval()
        out = [self.embed_batch(self.tokenize(texts[i:i + batch_size])).float().cpu().numpy()
               for i in range(0, len(texts), batch_size)]
        self.model.train(was_training)
        return np.concatenate(out, axis=0) if out else np.zeros((0, 0), dtype=np.float32)


def _autocast(device: torch.device) -> Any:
    if device.type == "cuda":
        return torch.autocast(device_type="cuda", dtype=torch.bfloat16)
    return torch.autocast(device_type="cpu", enabled=False)


def evaluate_sets(encoder: Encoder, eval_sets: dict[str, StsSet], batch_size: int) -> dict[str, float]:
    scores = {}
    for name, sts in eval_sets.items():
        uniq = sts.unique_sentences()
        e1, e2 = pair_vectors(sts, uniq, encoder.encode(uniq, batch_size))
        scores[name] = spearman(cosine_rows(e1, e2), sts.scores)
    return scores


def _save(st_model: Any, out_dir: Path) -> None:
    staging = out_dir.parent / f".{out_dir.name}.saving"
    shutil.rmtree(staging, ignore_errors=True)
    st_model.save(str(staging))
    shutil.rmtree(out_dir, ignore_errors=True)
    staging.rename(out_dir)


class MedSEHead(torch.nn.Module):
    """Entity encoder plus the separate definition encoder of MED-SE."""

    def __init__(self, settings: TrainSettings, main: Encoder) -> None:
        super().__init__()
        dim = main.model.config.hidden_size
        self.entity_encoder = EntityEncoder(settings.entity_encoder, dim, layers=settings.entity_layers)
        self.definition_model = copy.deepcopy(main.model)
        self.definition_model.requires_grad_(settings.definition_trainable)
        self.definitions = Encoder(self.definition_model, main.tokenizer, main.pooling, main.first_layer,
                                   settings.definition_max_length, main.device)
        self.trainable_definitions = settings.definition_trainable


def train(base_model: str, settings: TrainSettings, out_dir: str | Path, eval_sets: dict[str, StsSet],
          selection_set: str, plan: pd.DataFrame | None = None, sentences: pd.DataFrame | None = None,
          entities: pd.DataFrame | None = None, log: Any = print) -> TrainResult:
    """Train (or, for ``none``, just wrap) one model and save the selected step to ``out_dir``.

    ``plan``: the batch plan (step, slot, sent_id, ent_idx); ``sentences``: sent_id -> text;
    ``entities``: linked entities (sent_id, ent_idx, start, end, definition).
    """
    if settings.objective not in OBJECTIVES:
        raise ValueError(f"unknown objective {settings.objective!r}; use one of {', '.join(OBJECTIVES)}")
    if selection_set not in eval_sets:
        raise ValueError(f"selection set {selection_set!r} is not among the eval sets {sorted(eval_sets)}")
    out_dir = Path(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    seed_everything(settings.seed)
    device = pick_device()
    transformer = load_transformer(base_model, settings.max_length)
    st_model = sentence_transformer(transformer, settings.pooling, settings.first_layer, device=str(device))
    main = Encoder(transformer.model, transformer.tokenizer, settings.pooling, settings.first_layer,
                   settings.max_length, device)
    curve: list[dict[str, Any]] = []
    best = (-np.inf, 0)

    def evaluate(step: int, losses: tuple[float, float, float]) -> None:
        nonlocal best
        scores = evaluate_sets(main, eval_sets, settings.eval_batch_size)
        for name, value in scores.items():
            curve.append({"step": step, "eval_set": name, "spearman": value, "loss": losses[0],
                          "loss_sentence": losses[1], "loss_entity": losses[2]})
        log(f"step {step}: " + ", ".join(f"{k}={v:.4f}" for k, v in scores.items()))
        selectable = step > 0 or settings.objective == "none" or settings.steps == 0
        if selectable and scores[selection_set] > best[0]:
            best = (scores[selection_set], step)
            _save(st_model, out_dir)

    nan = float("nan")
    start = time.perf_counter()
    evaluate(0, (nan, nan, nan))
    train_seconds = 0.0
    if settings.objective != "none" and settings.steps > 0:
        if plan is None or sentences is None:
            raise ValueError(f"objective {settings.objective} needs a batch plan and sentences")
        train_seconds = _train_loop(settings, main, plan, sentences, entities, evaluate)
    n_sent = settings.steps * settings.batch_size if settings.objective != "none" else 0
    info = {
        "objective": settings.objective, "device": str(device), "selection_set": selection_set,
        "selected_step": best[1], "selection_spearman": best[0], "train_seconds": round(train_seconds, 3),
        "total_seconds": round(time.perf_counter() - start, 3),
        "sentences_per_second": round(n_sent / train_seconds, 2) if train_seconds > 0 else None,
        "settings": settings.to_dict(), "torch": torch.__version__,
    }
    return TrainResult(pd.DataFrame(curve, columns=CURVE_COLUMNS), best[1], best[0], info)


def _train_loop(settings: TrainSettings, main: Encoder, plan: pd.DataFrame, sentences: pd.DataFrame,
                entities: pd.DataFrame | None, evaluate: Any) -> float:
    text_of = dict(zip(sentences["sent_id"].astype("int64"), sentences["text"], strict=True))
    span_of: dict[tuple[int, int], tuple[int, int, str]] = {}
    if entities is not None:
        for sid, idx, a, b, d in zip(entities["sent_id"], entities["ent_idx"], entities["start"], entities["end"],
                                     entities["definition"], strict=True):
            if isinstance(d, str):
                span_of[(int(sid), int(idx))] = (int(a), int(b), d)
    steps = {int(s): g for s, g in plan.groupby("step", sort=True)}
    missing = [s for s in range(settings.steps) if s not in steps]
    if missing:
        raise ValueError(f"the batch plan has no rows for step(s) {missing[:5]} (plan steps < training steps)")
    head = MedSEHead(settings, main).to(main.device) if settings.objective == "medse" else None
    params = [p for p in main.model.parameters() if p.requires_grad]
    if head is not None:
        params += [p for p in head.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=settings.learning_rate, weight_decay=0.0)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: max(0.0, 1.0 - s / settings.steps))
    main.model.train()
    if head is not None:
        head.train()
    seconds = 0.0
    for step in range(1, settings.steps + 1):
        t0 = time.perf_counter()
        rows = steps[step - 1]
        ids = rows["sent_id"].astype("int64").tolist()
        texts = [text_of[i] for i in ids]
        batch = main.tokenize(texts, offsets=head is not None)
        doubled = {k: torch.cat([v, v]) for k, v in batch.items() if k != "offset_mapping"}
        hs = main.hidden_states(doubled)
        emb = pool(hs, doubled["attention_mask"].to(main.device), settings.pooling, settings.first_layer)
        z1, z2 = emb[: len(ids)], emb[len(ids):]
        if head is not None:
            h_ent, h_def = _entity_pairs(head, hs[-1][: len(ids)], batch["offset_mapping"], rows, span_of)
            loss, l_sen, l_ent = medse_loss(z1, z2, h_ent, h_def, settings.temperature, settings.lam)
        else:
            loss = l_sen = info_nce(z1, z2, settings.temperature)
            l_ent = torch.zeros((), device=main.device)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        scheduler.step()
        seconds += time.perf_counter() - t0
        if step % settings.eval_every == 0 or step == settings.steps:
            evaluate(step, (float(loss.item()), float(l_sen.item()), float(l_ent.item())))
    return seconds


def _entity_pairs(head: MedSEHead, last: torch.Tensor, offsets: torch.Tensor, rows: pd.DataFrame,
                  span_of: dict[tuple[int, int], tuple[int, int, str]]) -> tuple[torch.Tensor, torch.Tensor]:
    """(h_ent, h_def) for the rows of the batch whose chosen entity survived truncation (S^k)."""
    masks, keep, definitions = [], [], []
    for i, (sid, idx) in enumerate(zip(rows["sent_id"], rows["ent_idx"], strict=True)):
        span = span_of.get((int(sid), int(idx)))
        if span is None:
            continue
        mask = span_token_mask(offsets[i], span[0], span[1])
        if not bool(mask.any()):
            continue  # truncated away
        masks.append(mask)
        keep.append(i)
        definitions.append(span[2])
    if not keep:
        empty = last.new_zeros((0, last.size(-1)))
        return empty, empty
    h_ent = head.entity_encoder(last[keep], torch.stack(masks).to(last.device))
    def_batch = head.definitions.tokenize(definitions)
    with torch.set_grad_enabled(head.trainable_definitions):
        h_def = head.definitions.embed_batch(def_batch)
    return h_ent, h_def
