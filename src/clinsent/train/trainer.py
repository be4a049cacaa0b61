"""The training loop for the contrastive objectives, with the papers' step-selection protocol.

Every ``eval_every`` steps (and at the last step) the encoder embeds every eval set, the
Spearman of each is logged, and the step with the best Spearman on the selection set is kept
as the saved model (MED-SE section 4.4). Step 0 is logged for the curve but not selectable,
except where it is the only step (``objective: none``, or ``steps: 0``).

Objectives: ``simcse`` (with dropout, token cutoff or token shuffle as the augmentation),
``medse`` (SimCSE plus the entity-level loss) and ``ct`` (Contrastive Tension, two models).
Random draws of a step (augmentations, perturbations, CT pairs) come from generators seeded
by (seed, step), and dropout from torch's global generator, whose state the checkpoints keep:
a resumed job continues exactly where it stopped, and CPU runs are deterministic.

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
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from clinsent.augment.consert import AUGMENTATIONS, cutoff_rows, shuffled_position_ids, zero_rows_after_embeddings
from clinsent.evaluation.evaluate import pair_vectors
from clinsent.evaluation.metrics import cosine_rows, spearman
from clinsent.evaluation.sts_data import StsSet
from clinsent.losses.contrastive import info_nce
from clinsent.losses.ct import ct_loss, ct_pairs
from clinsent.losses.medse import medse_loss
from clinsent.models.base import load_transformer, sentence_transformer
from clinsent.models.entity_encoder import EntityEncoder
from clinsent.models.pooling import MlpHead, pool
from clinsent.train import checkpoint as ckpt
from clinsent.train.perturb import PERTURBATIONS, derangement, random_token_mask
from clinsent.train.settings import OBJECTIVES, OPTIMIZERS, TrainSettings
from clinsent.train.spans import span_token_mask

CURVE_COLUMNS = ["step", "eval_set", "spearman", "loss", "loss_sentence", "loss_entity"]
Losses = tuple[torch.Tensor, torch.Tensor, torch.Tensor]


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


def step_generator(seed: int, step: int) -> torch.Generator:
    """The CPU generator of one step's random draws (independent of resumption)."""
    return torch.Generator().manual_seed(seed * 1_000_003 + step)


class Encoder:
    """A Hugging Face encoder with its tokenizer and a pooling."""

    def __init__(self, model: Any, tokenizer: Any, pooling: str, first_layer: int, max_length: int,
                 device: torch.device) -> None:
        self.model, self.tokenizer = model, tokenizer
        self.pooling, self.first_layer, self.max_length, self.device = pooling, first_layer, max_length, device

    def tokenize(self, texts: list[str], offsets: bool = False) -> dict[str, torch.Tensor]:
        return dict(self.tokenizer(texts, padding=True, truncation=True, max_length=self.max_length,
                                   return_tensors="pt", return_offsets_mapping=offsets))

    def hidden_states(self, batch: dict[str, torch.Tensor], **extra: torch.Tensor) -> tuple[torch.Tensor, ...]:
        inputs = {k: v.to(self.device) for k, v in {**batch, **extra}.items() if k != "offset_mapping"}
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


def _save_model(st_model: Any, out_dir: Path) -> None:
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
        if settings.definition_model:
            loaded = load_transformer(settings.definition_model, settings.definition_max_length)
            self.definition_model, tokenizer = loaded.model.to(main.device), loaded.tokenizer
        else:
            self.definition_model, tokenizer = copy.deepcopy(main.model), main.tokenizer
        if self.definition_model.config.hidden_size != dim:
            raise ValueError(f"definition model width {self.definition_model.config.hidden_size} != encoder width {dim}")
        self.trainable_definitions = settings.definition_trainable
        self.definition_model.requires_grad_(settings.definition_trainable)
        pooling = settings.definition_pooling or settings.pooling
        self.definitions = Encoder(self.definition_model, tokenizer, pooling, settings.first_layer,
                                   settings.definition_max_length, main.device)

    def train(self, mode: bool = True) -> MedSEHead:
        super().train(mode)
        if not self.trainable_definitions:
            self.definition_model.eval()  # a frozen encoder: no dropout either
        return self


def _check(settings: TrainSettings, eval_sets: dict[str, StsSet], selection_set: str) -> None:
    for value, allowed, what in [(settings.objective, OBJECTIVES, "objective"),
                                 (settings.augmentation, AUGMENTATIONS, "augmentation"),
                                 (settings.perturbation, PERTURBATIONS, "perturbation"),
                                 (settings.optimizer, OPTIMIZERS, "optimizer")]:
        if value not in allowed:
            raise ValueError(f"unknown {what} {value!r}; use one of {', '.join(allowed)}")
    if settings.perturbation != "none" and settings.objective != "medse":
        raise ValueError(f"perturbation {settings.perturbation!r} applies to objective medse only")
    if settings.augmentation != "dropout" and settings.objective not in ("simcse", "medse"):
        raise ValueError(f"augmentation {settings.augmentation!r} applies to simcse and medse only")
    if selection_set not in eval_sets:
        raise ValueError(f"selection set {selection_set!r} is not among the eval sets {sorted(eval_sets)}")


def train(base_model: str, settings: TrainSettings, out_dir: str | Path, eval_sets: dict[str, StsSet],
          selection_set: str, plan: pd.DataFrame | None = None, sentences: pd.DataFrame | None = None,
          entities: pd.DataFrame | None = None, log: Callable[[str], Any] = print,
          checkpoint_dir: str | Path | None = None) -> TrainResult:
    """Train (or, for ``none``, just wrap) one model and save the selected step to ``out_dir``.

    ``plan``: the batch plan (step, slot, sent_id, ent_idx); ``sentences``: sent_id -> text;
    ``entities``: linked entities (sent_id, ent_idx, start, end, definition). ``checkpoint_dir``:
    where checkpoints and the best model so far live (default: a hidden folder beside
    ``out_dir``); a matching checkpoint there is resumed.
    """
    _check(settings, eval_sets, selection_set)
    out_dir = Path(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    work = Path(checkpoint_dir) if checkpoint_dir else out_dir.parent / f".{out_dir.name}.work"
    trained = settings.objective != "none" and settings.steps > 0
    if trained and (plan is None or sentences is None):
        raise ValueError(f"objective {settings.objective} needs a batch plan and sentences")
    seed_everything(settings.seed)
    device = pick_device()
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats()
    transformer = load_transformer(base_model, settings.max_length)
    st_model = sentence_transformer(transformer, settings.pooling, settings.first_layer, device=str(device))
    main = Encoder(transformer.model, transformer.tokenizer, settings.pooling, settings.first_layer,
                   settings.max_length, device)
    fp = ckpt.fingerprint(settings.to_dict(), base_model, plan if trained else None)
    resumed = ckpt.load_state(work, fp) if trained else None
    if resumed is None:
        shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True, exist_ok=True)
    curve: list[dict[str, Any]] = list(resumed["curve"]) if resumed else []
    best = ckpt.read_best(work) if resumed else None
    best_score, best_step = best if best else (-np.inf, 0)

    def evaluate(step: int, losses: tuple[float, float, float]) -> None:
        nonlocal best_score, best_step
        scores = evaluate_sets(main, eval_sets, settings.eval_batch_size)
        for name, value in scores.items():
            curve.append({"step": step, "eval_set": name, "spearman": value, "loss": losses[0],
                          "loss_sentence": losses[1], "loss_entity": losses[2]})
        log(f"step {step}: " + ", ".join(f"{k}={v:.4f}" for k, v in scores.items()))
        selectable = step > 0 or not trained
        if selectable and scores[selection_set] > best_score:
            best_score, best_step = scores[selection_set], step
            _save_model(st_model, work / ckpt.BEST)
            ckpt.write_best(work, best_score, best_step)

    nan = float("nan")
    start = time.perf_counter()
    if resumed is None:
        evaluate(0, (nan, nan, nan))
    train_seconds = 0.0
    if trained:
        assert plan is not None and sentences is not None
        loop = _Loop(settings, main, plan, sentences, entities)
        if resumed:
            loop.restore(resumed)
            log(f"resumed from the checkpoint at step {resumed['step']} in {work}")

        def save_checkpoint(step: int) -> None:
            ckpt.save_state(work, {**loop.state(step), "fingerprint": fp, "curve": curve})

        train_seconds = loop.run(evaluate, save_checkpoint, first_step=resumed["step"] + 1 if resumed else 1)
    if not (work / ckpt.BEST).exists():  # no finite selection score at any step: keep the last model
        log("no step had a finite selection-set Spearman; saving the last model")
        _save_model(st_model, work / ckpt.BEST)
    shutil.rmtree(out_dir, ignore_errors=True)
    (work / ckpt.BEST).rename(out_dir)
    shutil.rmtree(work, ignore_errors=True)
    n_sent = settings.steps * settings.batch_size if trained else 0
    info = {
        "objective": settings.objective, "device": str(device), "selection_set": selection_set,
        "selected_step": best_step, "selection_spearman": best_score, "train_seconds": round(train_seconds, 3),
        "total_seconds": round(time.perf_counter() - start, 3),
        "sentences_per_second": round(n_sent / train_seconds, 2) if train_seconds > 0 else None,
        "peak_gpu_memory_mb": round(torch.cuda.max_memory_allocated() / 2**20, 1) if device.type == "cuda" else None,
        "resumed_from_step": resumed["step"] if resumed else None,
        "settings": settings.to_dict(), "torch": torch.__version__,
    }
    return TrainResult(pd.DataFrame(curve, columns=CURVE_COLUMNS), best_step, best_score, info)


class _Loop:
    """The optimisation of one job: modules, optimiser, schedule and one step per objective."""

    def __init__(self, settings: TrainSettings, main: Encoder, plan: pd.DataFrame, sentences: pd.DataFrame,
                 entities: pd.DataFrame | None) -> None:
        self.s, self.main = settings, main
        self.text_of = dict(zip(sentences["sent_id"].astype("int64"), sentences["text"], strict=True))
        self.span_of: dict[tuple[int, int], tuple[int, int, str]] = {}
        if entities is not None:
            for sid, idx, a, b, d in zip(entities["sent_id"], entities["ent_idx"], entities["start"],
                                         entities["end"], entities["definition"], strict=True):
                if isinstance(d, str):
                    self.span_of[(int(sid), int(idx))] = (int(a), int(b), d)
        self.rows = {int(s): g for s, g in plan.groupby("step", sort=True)}
        missing = [s for s in range(settings.steps) if s not in self.rows]
        if missing:
            raise ValueError(f"the batch plan has no rows for step(s) {missing[:5]} (plan steps < training steps)")
        dim = main.model.config.hidden_size
        self.extras = torch.nn.ModuleDict()
        if settings.objective == "medse":
            self.extras["medse"] = MedSEHead(settings, main)
        if settings.pooling == "cls" and settings.objective in ("simcse", "medse"):
            self.extras["mlp"] = MlpHead(dim)
        self.twin: Encoder | None = None
        if settings.objective == "ct":
            self.extras["twin"] = copy.deepcopy(main.model)
            self.twin = Encoder(self.extras["twin"], main.tokenizer, settings.pooling, settings.first_layer,
                                settings.max_length, main.device)
        self.extras.to(main.device)
        params = [p for p in main.model.parameters() if p.requires_grad]
        params += [p for p in self.extras.parameters() if p.requires_grad]
        if settings.optimizer == "rmsprop":
            self.optimizer: torch.optim.Optimizer = torch.optim.RMSprop(params, lr=settings.learning_rate)
        else:
            self.optimizer = torch.optim.AdamW(params, lr=settings.learning_rate, weight_decay=0.0)
        total = max(settings.steps, 1)
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer, lambda s: max(0.0, 1.0 - s / total))
        torch.manual_seed(settings.seed)  # dropout masks do not depend on which extra modules were built

    def state(self, step: int) -> dict[str, Any]:
        return {"step": step, "model": self.main.model.state_dict(), "extras": self.extras.state_dict(),
                "optimizer": self.optimizer.state_dict(), "scheduler": self.scheduler.state_dict(),
                "rng": ckpt.rng_state()}

    def restore(self, state: dict[str, Any]) -> None:
        self.main.model.load_state_dict(state["model"])
        self.extras.load_state_dict(state["extras"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
        ckpt.set_rng_state(state["rng"])

    def _train_mode(self) -> None:
        self.main.model.train(self.s.dropout)
        self.extras.train()
        if self.twin is not None:
            self.twin.model.train(self.s.dropout)

    def run(self, evaluate: Callable[[int, tuple[float, float, float]], None],
            save_checkpoint: Callable[[int], None], first_step: int = 1) -> float:
        seconds = 0.0
        for step in range(first_step, self.s.steps + 1):
            self._train_mode()
            t0 = time.perf_counter()
            rows = self.rows[step - 1]
            gen = step_generator(self.s.seed, step)
            if self.s.objective == "ct":
                loss, l_sen, l_ent = self._ct_step(rows, gen)
            else:
                loss, l_sen, l_ent = self._contrastive_step(rows, gen)
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            self.optimizer.step()
            self.scheduler.step()
            seconds += time.perf_counter() - t0
            if step % self.s.eval_every == 0 or step == self.s.steps:
                evaluate(step, (float(loss.item()), float(l_sen.item()), float(l_ent.item())))
            if self.s.checkpoint_every and step % self.s.checkpoint_every == 0 and step < self.s.steps:
                save_checkpoint(step)
        return seconds

    def _texts(self, rows: pd.DataFrame) -> list[str]:
        return [self.text_of[i] for i in rows["sent_id"].astype("int64").tolist()]

    def _contrastive_step(self, rows: pd.DataFrame, gen: torch.Generator) -> Losses:
        main, s = self.main, self.s
        texts = self._texts(rows)
        n = len(texts)
        batch = main.tokenize(texts, offsets="medse" in self.extras)
        doubled = {k: torch.cat([v, v]) for k, v in batch.items() if k != "offset_mapping"}
        mask = doubled["attention_mask"]
        if s.augmentation == "token_shuffle":
            hs = main.hidden_states(doubled, position_ids=shuffled_position_ids(mask, gen))
        elif s.augmentation == "token_cutoff":
            with zero_rows_after_embeddings(main.model, cutoff_rows(mask, s.augmentation_rate, gen)):
                hs = main.hidden_states(doubled)
        else:
            hs = main.hidden_states(doubled)
        emb = pool(hs, mask.to(main.device), s.pooling, s.first_layer)
        if "mlp" in self.extras:
            emb = self.extras["mlp"](emb)
        z1, z2 = emb[:n], emb[n:]
        if "medse" in self.extras:
            h_ent, h_def = self._entity_pairs(hs[-1][:n], batch, rows, gen)
            return medse_loss(z1, z2, h_ent, h_def, s.temperature, s.lam)
        loss = info_nce(z1, z2, s.temperature)
        return loss, loss, torch.zeros((), device=main.device)

    def _ct_step(self, rows: pd.DataFrame, gen: torch.Generator) -> Losses:
        assert self.twin is not None
        rng = np.random.default_rng(int(torch.randint(2**62, (1,), generator=gen)))
        first, second, labels = ct_pairs(self._texts(rows), rng)
        e1 = self.twin.embed_batch(self.twin.tokenize(first))
        e2 = self.main.embed_batch(self.main.tokenize(second))
        loss = ct_loss(e1, e2, labels)
        return loss, loss, torch.zeros((), device=self.main.device)

    def _entity_pairs(self, last: torch.Tensor, batch: dict[str, torch.Tensor], rows: pd.DataFrame,
                      gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        """(h_ent, h_def) for the rows of the batch whose chosen entity survived truncation (S^k)."""
        head: MedSEHead = self.extras["medse"]  # type: ignore[assignment]
        perturbation = self.s.perturbation
        masks, keep, definitions = [], [], []
        for i, (sid, idx) in enumerate(zip(rows["sent_id"], rows["ent_idx"], strict=True)):
            span = self.span_of.get((int(sid), int(idx)))
            if span is None:
                continue
            mask = span_token_mask(batch["offset_mapping"][i], span[0], span[1])
            if not bool(mask.any()):
                continue  # truncated away
            if perturbation == "sentence_pooling":
                mask = batch["attention_mask"][i].bool()
            elif perturbation == "random_tokens":
                mask = random_token_mask(mask[None], batch["attention_mask"][i][None], gen)[0]
            masks.append(mask)
            keep.append(i)
            definitions.append(span[2])
        if not keep:
            empty = last.new_zeros((0, last.size(-1)))
            return empty, empty
        span_mask = torch.stack(masks).to(last.device)
        h_ent = head.entity_encoder(last[keep], span_mask, batch["attention_mask"][keep].to(last.device))
        with torch.set_grad_enabled(head.trainable_definitions):
            h_def = head.definitions.embed_batch(head.definitions.tokenize(definitions))
        if perturbation == "shuffle_pairs":
            h_def = h_def[derangement(len(keep), gen).to(h_def.device)]
        return h_ent, h_def
