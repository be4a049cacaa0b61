"""The training loop, with the papers' step-selection protocol. It names no method.

The method (:mod:`clinsent.methods`) builds a loss module that owns its extra modules,
prepares each step's batch on the CPU and returns named loss parts; this loop sums the parts,
optimises, evaluates the curve sets every ``eval_every`` steps (and at the last step), keeps
the step with the best selection-set headline metric as the saved model (MED-SE section 4.4),
and checkpoints. Step 0 is logged for the curve but not selectable, except where it is the
only step (untrained methods; ``steps: 0`` of a trained objective is refused when the config is read).

Batches are prepared one or two steps ahead on a background thread
(:mod:`clinsent.train.prefetch`). Their random draws come from generators seeded by
(seed, step) and dropout from torch's global generator, whose state the checkpoints keep: a
resumed job continues exactly where it stopped, and CPU runs are deterministic.

Why a custom loop rather than sentence-transformers' trainer: MED-SE needs the token states
of the same forward pass as the sentence embedding, entity spans and definitions per row, a
second encoder, and batches fixed in advance by the batch plan (the stock trainer reshuffles
rows and its collator drops non-text columns). Sentence-transformers still provides the model
modules, the tokenizer and the saved model format; the optimiser, schedule and clipping are the
training core's (:mod:`clinsent.optimisation`), shared with fine-tuning and the frozen head.
"""

from __future__ import annotations

import contextlib
import math
import shutil
import signal
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from clinsent import eval_length
from clinsent.data import TrainingData
from clinsent.errors import InputError
from clinsent.evaluation.bootstrap import Items
from clinsent.guarded import claim
from clinsent.hardware import describe, hardware_record
from clinsent.losses.base import MethodLoss
from clinsent.methods.base import Method, TrainedSettings, rows_source
from clinsent.models.base import load_transformer, resolve_model, sentence_transformer
from clinsent.models.encoder import Encoder, checkpoint_layers
from clinsent.models.pooling import MlpHead, pooling_spec
from clinsent.models.unpadded import attach, varlen_fallback_note
from clinsent.optimisation import Optimisation, pick_device, seed_everything
from clinsent.precision import resolve as resolve_precision
from clinsent.precision import slow_on
from clinsent.settings import to_config
from clinsent.speed import resolved as resolved_speed
from clinsent.tasks.base import Task
from clinsent.tracking import LiveCurve, Trackers
from clinsent.train import checkpoint as ckpt
from clinsent.train.chunked import accumulated_step, cached_step
from clinsent.train.compiled import compile_loss
from clinsent.train.prefetch import pinned, prefetch, workers_for

__all__ = ["MethodLoop", "Preempted", "TrainResult", "pick_device", "seed_everything", "steps_from_epochs", "train"]

CURVE_COLUMNS = ["step", "eval_set", "metric", "score", "score_low", "score_high", "loss"]


class Preempted(RuntimeError):
    """SIGTERM (a scheduler's preemption or time limit) stopped training after a checkpoint."""


@contextlib.contextmanager
def sigterm_flag() -> Iterator[dict[str, int]]:
    """While open, SIGTERM sets ``flag["signal"]`` instead of killing the process, so the loop
    can finish its step, checkpoint and stop (Slurm sends SIGTERM, then SIGKILL after its
    KillWait). Outside the main thread (no handler can be set) the default stays."""
    flag: dict[str, int] = {}
    if threading.current_thread() is not threading.main_thread():
        yield flag
        return

    def note(signum: int, _frame: Any) -> None:
        flag["signal"] = signum

    previous = signal.signal(signal.SIGTERM, note)
    try:
        yield flag
    finally:
        signal.signal(signal.SIGTERM, previous)


@dataclass
class TrainResult:
    curve: pd.DataFrame
    selected_step: int
    selection_score: float
    info: dict[str, Any]


def steps_from_epochs(method: Method, data: TrainingData | None) -> Method:
    """A method trained for ``epochs`` over training rows: its steps, now that the rows are read
    (round(epochs x full batches per epoch), at least 1); any other method as it is."""
    from dataclasses import replace

    s = method.settings
    per_epoch = getattr(data, "per_epoch", None)
    if not isinstance(s, TrainedSettings) or s.epochs is None or per_epoch is None or not rows_source(s):
        return method
    return type(method)(replace(s, steps=max(1, int(round(s.epochs * per_epoch)))))


def step_generator(seed: int, step: int) -> torch.Generator:
    """The CPU generator of one step's random draws (independent of resumption)."""
    return torch.Generator().manual_seed(seed * 1_000_003 + step)


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


def _save_model(st_model: Any, out_dir: Path) -> None:
    """Save the model whole or not at all (:func:`clinsent.io.atomic_folder`)."""
    from clinsent.io import atomic_folder
    from clinsent.names import inside

    inside(out_dir, out_dir.parent)  # the folder replaced is the output itself, not one reached through a name
    with atomic_folder(out_dir) as staged:
        st_model.save(str(staged))


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def train(
    method: Method,
    base_model: str,
    out_dir: str | Path,
    eval_sets: Mapping[str, Task],
    selection_set: str | None,
    data: TrainingData | None = None,
    seed: int = 0,
    log: Callable[[str], Any] = print,
    checkpoint_dir: str | Path | None = None,
    progress_every: int = 0,
    progress_seconds: float = 30.0,
    tracking: Sequence[str] = (),
    tracking_dir: str | Path | None = None,
    eval_max_length: int | str = eval_length.AUTO,
    notes: Mapping[str, Any] | None = None,
) -> TrainResult:
    """Train (or, for an untrained method, just wrap) one model and save the selected step to ``out_dir``.

    ``eval_sets``: the curve sets (the selection set among them); ``data``: the method's
    training data (see :mod:`clinsent.data`). ``selection_set`` None keeps the last step (the
    curve then holds the sets marked curve, or the loss alone). ``checkpoint_dir``: where checkpoints and the best
    model so far live (default: a hidden folder beside ``out_dir``); a matching checkpoint there
    is resumed. ``progress_seconds``: a progress line (loss parts, rows/s, ETA) after the first
    step and then at least this often (0: none); ``progress_every``: also one every n steps.
    The curve grows in ``curve.jsonl`` of that folder as the job runs; ``tracking``: trackers
    (:data:`clinsent.tracking.TRACKERS`) writing under ``tracking_dir`` (default: ``out_dir``'s
    parent, the run's folder). ``eval_max_length``: the evaluation length
    (:mod:`clinsent.eval_length`): the curve sets are scored at it and the model is saved with it.
    ``notes``: what the model card says of the notes trained on (config key, format, length filter).
    """
    if selection_set is not None and selection_set not in eval_sets:
        raise ValueError(f"selection set {selection_set!r} is not among the eval sets {sorted(eval_sets)}")
    method = method.with_own_pooling(resolve_model(base_model))
    s = method.settings
    trained = method.trains
    if trained and data is None:
        raise ValueError(f"objective {method.name} needs training data")
    out_dir = Path(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    work = Path(checkpoint_dir) if checkpoint_dir else out_dir.parent / f".{out_dir.name}.work"
    seed_everything(seed)
    device = pick_device()
    method = type(method)(resolved_speed(s, device.type))  # compile and unpad's auto, as it runs here
    s = method.settings
    precision = resolve_precision(getattr(s, "precision", "auto"), device)
    record = hardware_record(device, precision)
    log(describe(record))
    if warning := slow_on(device, precision):
        log(warning)
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats()
    transformer = load_transformer(base_model, s.max_length)
    evaluated_at = eval_length.resolve(eval_max_length, resolve_model(base_model), transformer.model.config)
    log(f"evaluation length: {evaluated_at} tokens per text (evaluation.max_length: {eval_max_length})")
    head = MlpHead(transformer.model.config.hidden_size) if pooling_spec(s.pooling).mlp_at_test else None
    st_model = sentence_transformer(transformer, s.pooling, s.first_layer, device=str(device), head=head)
    st_model.max_seq_length = evaluated_at  # saved with the evaluation length: every later encode reads it
    encoder = Encoder(
        transformer.model,
        transformer.tokenizer,
        s.pooling,
        s.first_layer,
        s.max_length,
        device,
        head=head,
        precision=precision,
    )
    settings = {"objective": method.name, **to_config(s), "seed": seed}
    fp = ckpt.fingerprint(  # a checkpoint's curve was scored at its evaluation length: another length starts over
        {**settings, "eval_max_length": evaluated_at},
        base_model,
        data.identity() if trained and data is not None else None,
    )
    resumed = ckpt.load_state(work, fp, report=log) if trained else None
    if resumed is None:
        shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True, exist_ok=True)
    curve: list[dict[str, Any]] = list(resumed["curve"]) if resumed else []
    best = ckpt.read_best(work) if resumed else None
    best_score, best_step = best if best else (-np.inf, 0)
    headline = {name: task.headline for name, task in eval_sets.items()}
    timing = {"eval_seconds": 0.0, "checkpoint_seconds": 0.0}
    live = LiveCurve(work, curve)
    trackers = Trackers(tracking, tracking_dir or out_dir.parent, resumed["step"] + 1 if resumed else 1)

    def evaluate(step: int, losses: dict[str, float]) -> None:
        nonlocal best_score, best_step
        t0 = time.perf_counter()
        banded = curve_scores(encoder, eval_sets, s.eval_batch_size, evaluated_at)
        scores = {name: value for name, (value, _, _) in banded.items()}
        rows = [
            {
                "step": step,
                "eval_set": name,
                "metric": headline[name],
                "score": value,
                "score_low": low,
                "score_high": high,
                **losses,
            }
            for name, (value, low, high) in banded.items()
        ]
        # nothing to evaluate: the curve keeps the loss
        rows = rows or [{"step": step, "eval_set": "", "metric": "", "score": float("nan"), **losses}]
        curve.extend(rows)
        live.append(rows)
        trackers.scalars(step, {f"eval/{name}/{headline[name]}": value for name, value in scores.items()})
        # before the first step there is no loss to show; losses in significant digits (a small one is not 0.0000)
        shown = [f"{k} {headline[k]}={v:.4f}" for k, v in scores.items()] + [
            f"{k}={v:.4g}" for k, v in losses.items() if not math.isnan(v)
        ]
        if shown:  # step 0 without a curve set has nothing to show
            log(f"step {step}: " + ", ".join(shown))
        if selection_set is None:
            best_step = step
        elif (step > 0 or not trained) and scores[selection_set] > best_score:
            best_score, best_step = scores[selection_set], step
            _save_model(st_model, work / ckpt.BEST)
            ckpt.write_best(work, best_score, best_step)
        timing["eval_seconds"] += time.perf_counter() - t0

    start = time.perf_counter()
    if resumed is None:
        evaluate(0, {"loss": float("nan")})
    train_seconds, steps_run = 0.0, 0
    loop: MethodLoop | None = None
    if trained:
        assert data is not None and isinstance(s, TrainedSettings)
        data.check(s.steps)
        loop = MethodLoop(method, encoder, seed, data)
        if s.varlen_attention and (note := varlen_fallback_note(device)):
            log(note)
        if resumed:
            loop.restore(resumed)
            log(f"resumed from the checkpoint at step {resumed['step']} in {work}")

        def save_checkpoint(step: int) -> Path:
            t0 = time.perf_counter()
            path = ckpt.save_state(work, {**loop.state(step), "fingerprint": fp, "curve": curve})
            timing["checkpoint_seconds"] += time.perf_counter() - t0
            return path

        first = resumed["step"] + 1 if resumed else 1
        with sigterm_flag() as flag:
            train_seconds = loop.run(
                data,
                evaluate,
                save_checkpoint,
                first_step=first,
                stop=flag,
                log=log,
                progress_every=progress_every,
                track=trackers.scalars,
                progress_seconds=progress_seconds,
            )
        steps_run = s.steps - first + 1
    trackers.close()  # events are flushed as they are written: a killed job's are on disk too
    if not (work / ckpt.BEST).exists():  # no selection set, or no finite score at any step: the last model
        if selection_set is not None:
            log("no step had a finite selection-set score; saving the last model")
        _save_model(st_model, work / ckpt.BEST)
    claim(out_dir)  # the guarded writer: inside what the job owns, never over an input
    shutil.rmtree(out_dir, ignore_errors=True)
    (work / ckpt.BEST).rename(out_dir)
    shutil.rmtree(work, ignore_errors=True)
    rows = (
        steps_run * s.batch_size if isinstance(s, TrainedSettings) else 0
    )  # this run's steps (after a resume: fewer)
    info = {
        "objective": method.name,
        **record,
        "selection_set": selection_set,
        "selection_metric": headline[selection_set] if selection_set else None,
        "selected_step": best_step,
        "selection_score": best_score if selection_set else None,
        "train_seconds": round(train_seconds, 3),
        "eval_seconds": round(timing["eval_seconds"], 3),
        "checkpoint_seconds": round(timing["checkpoint_seconds"], 3),
        "total_seconds": round(time.perf_counter() - start, 3),
        "rows_per_second": round(rows / train_seconds, 2) if train_seconds > 0 else None,
        "peak_gpu_memory_mb": round(torch.cuda.max_memory_allocated() / 2**20, 1) if device.type == "cuda" else None,
        "resumed_from_step": resumed["step"] if resumed else None,
        "skipped_steps": loop.optimisation.skipped if loop is not None else 0,  # fp16 overflows
        "settings": settings,
        "eval_max_length": evaluated_at,  # tokens per text at evaluation (clinsent.eval_length)
        "eval_max_length_spec": eval_max_length,
        # the model card's line (and, for the notes' sets, their config key, format and length filter)
        "training_data": {**data.summary(), **({"notes_entry": dict(notes)} if notes else {})}
        if trained and data is not None
        else None,
    }
    parts = [c for c in dict.fromkeys(k for row in curve for k in row) if c.startswith(("loss_", "stat_"))]
    return TrainResult(pd.DataFrame(curve, columns=CURVE_COLUMNS + parts), best_step, best_score, info)


class MethodLoop:
    """The optimisation of one job: the method's loss module and the training core's optimiser,
    schedule and clipping (:class:`clinsent.optimisation.Optimisation`), stepped through the batch
    plan's steps. ``bench/`` times its :meth:`step`."""

    def __init__(
        self, method: Method[TrainedSettings], encoder: Encoder, seed: int, data: TrainingData | None = None
    ) -> None:
        s = resolved_speed(method.settings, encoder.device.type)  # compile and unpad's auto, on this device
        self.s, self.encoder, self.seed = s, encoder, seed
        if s.gradient_checkpointing:  # before the loss copies the encoder (CT's twin, MED-SE's definitions)
            checkpoint_layers(encoder.model, dropout=s.dropout)
        loss = method.build_loss(encoder)
        loss.bind(data)
        self.loss: MethodLoss = loss.to(encoder.device)
        self.params: list[torch.nn.Parameter] = []
        head = list(encoder.head.parameters()) if encoder.head is not None else []
        for p in [*encoder.model.parameters(), *head, *self.loss.parameters()]:  # a shared module counts once
            if p.requires_grad and all(p is not q for q in self.params):
                self.params.append(p)
        self.optimisation = Optimisation(
            self.params,
            s.learning_rate,
            s.steps,
            warmup_ratio=s.warmup_ratio,
            grad_clip=s.grad_clip,
            optimizer=s.optimizer,
            device=encoder.device,
            precision=encoder.precision,
        )
        if s.unpad:  # every encoder of the loss (MED-SE's definitions, CT's twin) on its real tokens
            from clinsent.models.unpadded import supports
            from clinsent.train.compiled import encoders_of

            for enc in encoders_of(self.loss, encoder):
                if not supports(enc.model):
                    raise InputError(
                        f"methods: {method.name}.unpad",
                        f"{type(enc.model).__name__} has not BERT's "
                        "layout (embeddings, encoder.layer[i].attention.self.query, ...)",
                        "remove unpad for this base model",
                    )
                enc.unpad, enc.varlen = True, s.varlen_attention
        # the plain step's forward: the loss module, or (``compile``) the whole of it compiled
        self.forward: Callable[[dict[str, Any]], dict[str, torch.Tensor]] = self.loss
        if s.compile:
            self.forward = compile_loss(self.loss, encoder, s.compile_mode)
        torch.manual_seed(seed)  # dropout masks do not depend on which extra modules were built

    def state(self, step: int) -> dict[str, Any]:
        head = self.encoder.head.state_dict() if self.encoder.head is not None else None
        return {
            "step": step,
            "model": self.encoder.model.state_dict(),
            "head": head,
            "loss": self.loss.state_dict(),
            **self.optimisation.state_dict(),
            "rng": ckpt.rng_state(),
        }

    def restore(self, state: dict[str, Any]) -> None:
        self.encoder.model.load_state_dict(state["model"])
        if self.encoder.head is not None:
            self.encoder.head.load_state_dict(state["head"])
        self.loss.load_state_dict(state["loss"])
        self.optimisation.load_state_dict(state)
        ckpt.set_rng_state(state["rng"])

    def step(self, batch: dict[str, Any]) -> dict[str, torch.Tensor]:
        """One optimisation step on a prepared batch; returns the loss parts. A batch of more rows
        than ``mini_batch`` is stepped in cached chunks, one with ``accumulate`` > 1 in
        micro-batches (:mod:`clinsent.train.chunked`); otherwise one pass."""
        s, opt = self.s, self.optimisation
        self.loss.train()  # first: a loss holding the encoder's module (the MLM head's model) sets it too
        self.encoder.model.train(s.dropout or s.gradient_checkpointing)  # checkpointing: train mode, dropout p 0
        rows = self.loss.rows(batch) if s.mini_batch is not None or s.accumulate > 1 else 0  # a plain step never asks
        if s.mini_batch is not None and rows > s.mini_batch:
            opt.zero_grad()
            parts = cached_step(self.loss, batch, s.mini_batch, self.encoder.device, opt.scale)
        elif s.accumulate > 1 and rows > 1:
            opt.zero_grad()
            parts = accumulated_step(self.loss, batch, math.ceil(rows / s.accumulate), opt.scale)
        else:
            parts = self.forward(batch)
            total = torch.stack(list(parts.values())).sum()
            opt.step(total)
            return self._record(total, parts)
        opt.apply()
        return self._record(torch.stack([v.float() for v in parts.values()]).sum(), parts)

    def _record(self, total: torch.Tensor, parts: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        return {
            "loss": total.detach(),
            **{f"loss_{k}": v.detach() for k, v in parts.items()},
            **{f"stat_{k}": v.detach() for k, v in self.loss.statistics().items()},
        }

    def prepare(self, data: TrainingData, step: int) -> dict[str, Any]:
        batch = self.loss.prepare(data.batch(step), step_generator(self.seed, step))
        if self.s.unpad:  # where each batch's real tokens are, found here rather than in the step
            attach(batch)
        return pinned(batch) if self.encoder.device.type == "cuda" else batch  # async host-to-GPU copies

    def run(
        self,
        data: TrainingData,
        evaluate: Callable[[int, dict[str, float]], None],
        save_checkpoint: Callable[[int], Path],
        first_step: int = 1,
        stop: Mapping[str, int] | None = None,
        log: Callable[[str], Any] = print,
        progress_every: int = 0,
        track: Callable[[int, Mapping[str, float]], None] | None = None,
        progress_seconds: float = 0.0,
    ) -> float:
        """Steps ``first_step``..``steps``; returns the seconds spent in them. When ``stop`` gets a
        signal, the step under way finishes, a checkpoint is written and :class:`Preempted` raised.
        A progress line (:mod:`clinsent.train.progress`: the loss and its parts, rows per second,
        the ETA) after the first step and then at least every ``progress_seconds``, without a host
        sync of its own; also every ``progress_every`` steps where that is set. At each evaluation
        and each ``progress_every`` point ``track`` gets the losses, the learning rate and the rows
        per second since the last one (:mod:`clinsent.tracking`)."""
        from clinsent.train.progress import TrainProgress

        seconds = 0.0
        device = self.encoder.device
        batches = prefetch(
            lambda step: self.prepare(data, step),
            range(first_step, self.s.steps + 1),
            depth=2,
            workers=workers_for(device.type, torch.get_num_threads()),
        )
        t0 = time.perf_counter()
        progress = TrainProgress(first_step, self.s.steps, self.s.batch_size, log, progress_seconds)
        last, since = first_step - 1, 0.0  # the last tracked step, and the step seconds after it
        for step, batch in batches:
            losses = self.step(batch)
            evaluating = step % self.s.eval_every == 0 or step == self.s.steps
            reporting = bool(progress_every) and step % progress_every == 0
            saving = bool(self.s.checkpoint_every) and step % self.s.checkpoint_every == 0 and step < self.s.steps
            if progress.due(step) or (reporting and progress.pending is None):
                progress.take(step, losses)  # a copy to the host that does not wait
            if not (evaluating or reporting or saving or (stop and "signal" in stop)):
                progress.poll()  # written once its values have arrived
                continue  # no host sync between these points: the steps queue on the device
            _sync(device)  # the steps since the last sync point, timed together
            progress.poll(synced=True)
            seconds += time.perf_counter() - t0
            since += time.perf_counter() - t0
            if (evaluating or reporting) and track is not None:
                track(
                    step,
                    {
                        **{f"train/{k}": float(v.item()) for k, v in losses.items()},
                        "train/learning_rate": float(self.optimisation.scheduler.get_last_lr()[0]),
                        "train/rows_per_second": (step - last) * self.s.batch_size / max(since, 1e-9),
                    },
                )
                last, since = step, 0.0
            if evaluating:
                evaluate(step, {k: float(v.item()) for k, v in losses.items()})
            if saving:
                save_checkpoint(step)
            if stop and "signal" in stop:
                t1 = time.perf_counter()
                path = save_checkpoint(step)
                log(
                    f"signal {stop['signal']} at step {step}: checkpoint {path} written in "
                    f"{time.perf_counter() - t1:.1f} s; stopping (a rerun resumes from it)"
                )
                raise Preempted(f"stopped by signal {stop['signal']} after step {step}; checkpoint {path}")
            t0 = time.perf_counter()
        progress.poll(synced=True)  # the last step's sync point wrote any pending line already
        return seconds
