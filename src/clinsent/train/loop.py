"""One job's optimisation (:class:`MethodLoop`): the method's loss module, the training core's
optimiser, schedule and clipping (:mod:`clinsent.optimisation`), stepped through the batch
plan's steps, each step's batch gathered from the token files into reused buffers, padded to the
job's length buckets (:mod:`clinsent.data.tokens`, :mod:`clinsent.data.buckets`; a text made in
the step is encoded ahead on background threads: :mod:`clinsent.train.prefetch`), each batch
shape's step captured as a CUDA graph where ``graphs`` is on (:mod:`clinsent.train.graphs`); and
how it stops on a scheduler's SIGTERM or the user's Ctrl-C (:func:`stop_flag`, :class:`Preempted`).
:mod:`clinsent.train.trainer` drives it; ``bench/`` times its :meth:`MethodLoop.advance`.

Each step's random draws come from a generator seeded by (seed, step) (:func:`step_generator`)
and dropout from torch's global generator, whose state the checkpoints keep: a resumed job
continues exactly where it stopped, and CPU runs are deterministic.
"""

from __future__ import annotations

import contextlib
import math
import signal
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from clinsent.data import TrainingData
from clinsent.data.buckets import Buckets
from clinsent.data.buckets import resolve as resolve_buckets
from clinsent.data.positions import Buffers
from clinsent.errors import InputError
from clinsent.gpu.speed import resolved as resolved_speed
from clinsent.losses.base import MethodLoss
from clinsent.methods.base import Method
from clinsent.methods.knobs import TrainedSettings
from clinsent.models.encoder import Encoder, checkpoint_layers
from clinsent.models.unpadded import attach
from clinsent.optimisation import Optimisation
from clinsent.train import checkpoint as ckpt
from clinsent.train.chunked import accumulated_step, cached_step
from clinsent.train.compiled import compile_loss
from clinsent.train.graphs import CapturedSteps, eager_reason
from clinsent.train.prefetch import Prefetch, pinned, prefetch, workers_for
from clinsent.train.processes import Processes

PREFETCH = 2  # batches prepared ahead of the step


STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)  # a scheduler's stop; the user's Ctrl-C


class Preempted(RuntimeError):
    """SIGTERM (a scheduler's preemption or time limit) or Ctrl-C stopped training after a
    checkpoint; ``signum`` says which (the job exits with 128 + it)."""

    def __init__(self, message: str, signum: int = signal.SIGTERM) -> None:
        super().__init__(message)
        self.signum = int(signum)


@contextlib.contextmanager
def stop_flag() -> Iterator[dict[str, int]]:
    """While open, SIGTERM or SIGINT (Ctrl-C) sets ``flag["signal"]`` instead of killing the
    process, so the loop can finish its step, checkpoint and stop (Slurm sends SIGTERM, then
    SIGKILL after its KillWait; Ctrl-C loses no step either). Outside the main thread (no handler
    can be set) the defaults stay."""
    flag: dict[str, int] = {}
    if threading.current_thread() is not threading.main_thread():
        yield flag
        return

    def note(signum: int, _frame: Any) -> None:
        flag["signal"] = signum

    previous = {s: signal.signal(s, note) for s in STOP_SIGNALS}
    try:
        yield flag
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def step_generator(seed: int, step: int) -> torch.Generator:
    """The CPU generator of one step's random draws (independent of resumption)."""
    return torch.Generator().manual_seed(seed * 1_000_003 + step)


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def _trainable(encoder: Encoder, loss: MethodLoss) -> list[torch.nn.Parameter]:
    """The step's trainable parameters: the encoder's, its head's and the loss's own, a module
    shared between them counted once."""
    params: list[torch.nn.Parameter] = []
    head = list(encoder.head.parameters()) if encoder.head is not None else []
    for p in [*encoder.model.parameters(), *head, *loss.parameters()]:
        if p.requires_grad and all(p is not q for q in params):
            params.append(p)
    return params


def _unpad(loss: MethodLoss, encoder: Encoder, method: str, varlen: bool) -> None:
    """Every encoder of the loss on its real tokens (``unpad``), or an error naming the knob for
    a model without BERT's layout."""
    from clinsent.models.unpadded import supports
    from clinsent.train.compiled import encoders_of

    for enc in encoders_of(loss, encoder):
        if not supports(enc.model):
            raise InputError(
                f"methods: {method}.unpad",
                f"{type(enc.model).__name__} has not BERT's "
                "layout (embeddings, encoder.layer[i].attention.self.query, ...)",
                "remove unpad for this base model",
            )
        enc.unpad, enc.varlen = True, varlen


class MethodLoop:
    """The optimisation of one job: the method's loss module and the training core's optimiser,
    schedule and clipping (:class:`clinsent.optimisation.Optimisation`), stepped through the batch
    plan's steps. ``bench/`` times its :meth:`step`."""

    def __init__(
        self,
        method: Method[TrainedSettings],
        encoder: Encoder,
        seed: int,
        data: TrainingData | None = None,
        log: Callable[[str], Any] = print,
        capture: Any = None,
        processes: Processes | None = None,
    ) -> None:
        s = resolved_speed(method.settings, encoder.device.type, method.name)  # the speed knobs' auto, here
        self.s, self.encoder, self.seed, self.processes = s, encoder, seed, processes
        if s.gradient_checkpointing:  # before the loss copies the encoder (CT's twin, MED-SE's definitions)
            checkpoint_layers(encoder.model, dropout=s.dropout)
        loss = method.build_loss(encoder)
        loss.bind(data)
        self.loss: MethodLoss = loss.to(encoder.device)
        self.params = _trainable(encoder, self.loss)
        why_eager = eager_reason(s, self.loss, encoder.device, encoder.precision) if capture is None else None
        if processes is not None and why_eager is None:  # docs/performance.md: what capturing DDP needs
            why_eager = "a step over several processes runs eagerly in this version"
        captured = bool(s.graphs) and why_eager is None
        self.notes = [f"graphs: the steps stay eager ({why_eager})"] if s.graphs and why_eager else []
        self.optimisation = Optimisation(
            self.params,
            s.learning_rate,
            s.steps,
            warmup_ratio=s.warmup_ratio,
            grad_clip=s.grad_clip,
            optimizer=s.optimizer,
            device=encoder.device,
            precision=encoder.precision,
            capturable=captured and encoder.device.type == "cuda",
        )
        # each step's batch from the token files (no tokenizer in the step), in buffers reused
        # batch after batch (page-locked on CUDA), padded to the job's length buckets
        has_tokens = getattr(data, "has_tokens", None)  # a TrainingData (a test may bind a bare namespace)
        self.tokens = bool(callable(has_tokens) and has_tokens() and self.loss.assembles())
        self.loss.use_static_shapes(captured)  # e.g. MED-SE: an entity slot for every row
        apart = self.loss.use_grouped(bool(s.grouped))  # e.g. MED-SE's two encoders as one pass
        if apart and method.settings.grouped is True:  # asked for, and not possible: said in the log
            self.notes.append(f"grouped: the encoders run one after the other ({apart})")
        self.buckets = self._buckets(data) if self.tokens and data is not None else {}
        self.loss.use_buckets(self.buckets)
        self.buffers = Buffers(PREFETCH + 3, pin=encoder.device.type == "cuda") if self.tokens else None
        opt = self.optimisation
        self.graphs = (
            CapturedSteps(self._eager, self._body, opt.scheduler.step, opt.zero_grad, encoder.device, log, capture)
            if captured
            else None
        )
        if s.unpad:  # every encoder of the loss (MED-SE's definitions, CT's twin) on its real tokens
            _unpad(self.loss, encoder, method.name, s.varlen_attention)
        # the plain step's forward: the loss module, or (``compile``) the whole of it compiled
        self.forward: Callable[[dict[str, Any]], dict[str, torch.Tensor]] = self.loss
        if s.compile and processes is None:
            self.forward = compile_loss(self.loss, encoder, s.compile_mode)
        elif s.compile:
            self.notes.append("compile: a step over several processes runs eagerly in this version")
        self.ddp = None
        if processes is not None:  # each process embeds its share of every batch (clinsent.train.spread)
            from clinsent.train.spread import Embedder, wrap

            self.ddp = wrap(Embedder(self.loss, encoder.model, encoder.head))
        # dropout masks do not depend on which extra modules were built; each process draws its own
        torch.manual_seed(seed if processes is None or processes.main else seed * 1_000_003 + 7919 * processes.rank)

    def state(self, step: int) -> dict[str, Any]:
        head = self.encoder.head.state_dict() if self.encoder.head is not None else None
        return {
            "step": step,
            "model": self.encoder.model.state_dict(),
            "head": head,
            "loss": self.loss.state_dict(),
            **self.optimisation.state_dict(),
            "rng": ckpt.rng_state(),
            # every process's random state (dropout), in rank order: a resumed job on as many
            # processes draws what it would have drawn
            **({"rng_processes": self.processes.objects(ckpt.rng_state())} if self.processes is not None else {}),
        }

    def restore(self, state: dict[str, Any]) -> str | None:
        """Load a checkpoint's state; returns what differs from the run that wrote it (None: nothing),
        for the log."""
        self.encoder.model.load_state_dict(state["model"])
        if self.encoder.head is not None:
            self.encoder.head.load_state_dict(state["head"])
        self.loss.load_state_dict(state["loss"])
        self.optimisation.load_state_dict(state)
        kept = state.get("rng_processes") or [state["rng"]]
        world = self.processes.world if self.processes is not None else 1
        rank = self.processes.rank if self.processes is not None else 0
        ckpt.set_rng_state(kept[rank] if rank < len(kept) else state["rng"])
        if len(kept) == world:
            return None
        return (
            f"the checkpoint was written by {len(kept)} process{'es' if len(kept) > 1 else ''} and this run has "
            f"{world}: the model, the optimiser and every batch are as they were, but dropout's random draws "
            f"continue on another course (set training.processes: {len(kept)} to continue exactly)"
        )

    def step(self, batch: dict[str, Any]) -> dict[str, torch.Tensor]:
        """One optimisation step on a prepared batch; returns the loss parts. A batch of more rows
        than ``mini_batch`` is stepped in cached chunks, one with ``accumulate`` > 1 in
        micro-batches (:mod:`clinsent.train.chunked`); otherwise one pass."""
        s, opt = self.s, self.optimisation
        self.loss.train()  # first: a loss holding the encoder's module (the MLM head's model) sets it too
        self.encoder.model.train(s.dropout or s.gradient_checkpointing)  # checkpointing: train mode, dropout p 0
        rows = self.loss.rows(batch) if s.mini_batch is not None or s.accumulate > 1 else 0  # a plain step never asks
        if self.ddp is not None and self.processes is not None:  # this process's share of the global batch
            from clinsent.train.spread import spread_step

            opt.zero_grad()
            micro = math.ceil(rows / s.accumulate) if s.accumulate > 1 and rows > 1 else None
            parts = spread_step(
                self.loss, self.ddp, batch, self.processes, self.encoder.device, s.mini_batch, micro, opt.scale
            )
        elif s.mini_batch is not None and rows > s.mini_batch:
            opt.zero_grad()
            parts = cached_step(self.loss, batch, s.mini_batch, self.encoder.device, opt.scale)
        elif s.accumulate > 1 and rows > 1:
            opt.zero_grad()
            parts = accumulated_step(self.loss, batch, math.ceil(rows / s.accumulate), opt.scale)
        elif self.graphs is not None:
            return self.graphs(batch)  # captured once per shape, then replayed (clinsent.train.graphs)
        else:
            return self._eager(batch)
        opt.apply()
        return self._record(torch.stack([v.float() for v in parts.values()]).sum(), parts)

    def advance(self, step: int, batch: dict[str, Any]) -> dict[str, torch.Tensor]:
        """Step ``step`` on its batch (:meth:`step`); on CUDA its batch's buffers are fenced: they are
        filled again only once the step's copies from them have run."""
        losses = self.step(batch)
        if self.buffers is not None and self.encoder.device.type == "cuda":
            event = torch.cuda.Event()
            event.record()  # after the step's copies from the batch's buffers, on the same stream
            self.buffers.fence(step, event)
        return losses

    def _eager(self, batch: dict[str, Any]) -> dict[str, torch.Tensor]:
        """One plain step: the gradients zeroed, the loss's parts, backward, clip, optimiser and
        schedule step."""
        parts = self.forward(batch)
        total = torch.stack(list(parts.values())).sum()
        self.optimisation.step(total)
        return self._record(total, parts)

    def _body(self, batch: dict[str, Any]) -> dict[str, torch.Tensor]:
        """What a captured step holds: the loss's parts, backward, clip and optimiser step (the
        gradients are made by the captured backward; the schedule steps after each replay)."""
        parts = self.forward(batch)
        total = torch.stack(list(parts.values())).sum()
        total.backward()
        self.optimisation.clip_and_step()
        return self._record(total, parts)

    def _buckets(self, data: TrainingData) -> dict[str, Buckets]:
        """Each width group's length buckets, from the job's own batches (every step's longest row,
        known from the batch plan and the token files before the first step)."""
        groups = self.loss.width_groups()
        widths: dict[str, list[int]] = {g: [] for g in groups}
        rows = []
        for step in range(1, self.s.steps + 1):
            at = data.positions(step)
            found = self.loss.widths(at)
            for g in groups:
                widths[g].append(int(found.get(g, 1)))
            rows.append(at.n)
        return {g: resolve_buckets(self.s.length_buckets, group, widths[g], rows) for g, group in groups.items()}

    def describe(self) -> list[str]:
        """The log's lines on how this job's steps run: its length buckets, and whether its steps
        are captured."""
        lines = [f"{g}: {b.describe()}" for g, b in self.buckets.items()]
        if self.graphs is not None:
            lines.append("graphs: each batch shape's step captured as a CUDA graph the second time it is seen")
        if self.loss.grouped:
            lines.append("grouped: the encoders trained side by side run as one grouped pass")
        return lines + self.notes

    def _record(self, total: torch.Tensor, parts: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        return {
            "loss": total.detach(),
            **{f"loss_{k}": v.detach() for k, v in parts.items()},
            **{f"stat_{k}": v.detach() for k, v in self.loss.statistics().items()},
        }

    def prepare(self, data: TrainingData, step: int) -> dict[str, Any]:
        """Step ``step``'s batch: gathered from the token files into reused buffers (the loss's
        ``assemble``), or, without them, its rows tokenized (the loss's ``prepare``)."""
        generator = step_generator(self.seed, step)
        if self.tokens and self.buffers is not None:
            batch = self.loss.assemble(data.positions(step), generator, self.buffers.for_batch(step))
        else:
            batch = self.loss.prepare(data.batch(step), generator)
        if self.s.unpad:  # where each batch's real tokens are, found here rather than in the step
            attach(batch, self.loss.static_shapes)  # a captured step's: a fixed count per shape
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
        per second since the last one (:mod:`clinsent.train.tracking`)."""
        from clinsent.train.progress import TrainProgress

        progress = TrainProgress(first_step, self.s.steps, self.s.batch_size, log, progress_seconds)
        clock = _StepClock(first_step - 1)
        for step, batch in self.batches(data, first_step):
            losses = self.advance(step, batch)
            points = self._points(step, progress_every, self._asked(stop))
            if progress.due(step) or (points.reporting and progress.pending is None):
                progress.take(step, losses)  # a copy to the host that does not wait
            if not points.sync:
                progress.poll()  # written once its values have arrived
                continue  # no host sync between these points: the steps queue on the device
            _sync(self.encoder.device)  # the steps since the last sync point, timed together
            progress.poll(synced=True)
            clock.lap()
            if self.processes is not None:  # every process's replica the same, or a loud stop
                self.processes.check_same(self.named_parameters(), "parameters")
            if (points.evaluating or points.reporting) and track is not None:
                track(step, self._tracked(losses, clock.rate(step, self.s.batch_size)))
            if points.evaluating:
                evaluate(step, {k: float(v.item()) for k, v in losses.items()})
            if points.saving:
                save_checkpoint(step)
            if self._asked(stop):  # asked again: a signal may have come during the evaluation
                _stop(step, (stop or {}).get("signal", signal.SIGTERM), save_checkpoint, log)
            clock.restart()
        progress.poll(synced=True)  # the last step's sync point wrote any pending line already
        return clock.seconds

    def batches(self, data: TrainingData, first_step: int = 1) -> Prefetch[dict[str, Any]]:
        """The steps' batches from ``first_step`` on: gathered inline from the token files, or
        tokenized ahead on background threads (:mod:`clinsent.train.prefetch`)."""
        if self.tokens:  # a fraction of a millisecond, holding the interpreter lock: no thread
            depth, workers = 0, 1
        else:
            depth, workers = PREFETCH, workers_for(self.encoder.device.type, torch.get_num_threads())
        return prefetch(lambda step: self.prepare(data, step), range(first_step, self.s.steps + 1), depth, workers)

    def _points(self, step: int, progress_every: int, stopping: bool) -> _Points:
        s = self.s
        return _Points(
            evaluating=step % s.eval_every == 0 or step == s.steps,
            reporting=bool(progress_every) and step % progress_every == 0,
            saving=bool(s.checkpoint_every) and step % s.checkpoint_every == 0 and step < s.steps,
            stopping=stopping,
        )

    def _asked(self, stop: Mapping[str, int] | None) -> bool:
        """Whether the job stops after this step: its SIGTERM arrived; over several processes,
        at any of them (agreed on the CPU: every process stops after the same step)."""
        here = stop is not None and "signal" in stop
        return self.processes.agree(here) if self.processes is not None else here

    def named_parameters(self) -> dict[str, torch.Tensor]:
        """The step's trainable parameters by name (the module DDP wraps names them; without it,
        by their place in the list)."""
        if self.ddp is not None:
            return {k: p for k, p in self.ddp.module.named_parameters() if p.requires_grad}
        return {f"param{i}": p for i, p in enumerate(self.params)}

    def _tracked(self, losses: Mapping[str, torch.Tensor], rows_per_second: float) -> dict[str, float]:
        """What the trackers get at a point: the losses, the learning rate, the rows per second."""
        return {
            **{f"train/{k}": float(v.item()) for k, v in losses.items()},
            "train/learning_rate": float(self.optimisation.scheduler.get_last_lr()[0]),
            "train/rows_per_second": rows_per_second,
        }


@dataclass(frozen=True)
class _Points:
    """What happens after a step: an evaluation, a tracked progress point, a checkpoint, a stop."""

    evaluating: bool
    reporting: bool
    saving: bool
    stopping: bool

    @property
    def sync(self) -> bool:
        """Whether the host waits for the device here (every other step queues on it)."""
        return self.evaluating or self.reporting or self.saving or self.stopping


class _StepClock:
    """The seconds spent in steps (from one sync point to the next, evaluation and checkpoints
    left out), and the rows per second since the last tracked point."""

    def __init__(self, last_tracked: int) -> None:
        self.seconds, self.since, self.last = 0.0, 0.0, last_tracked
        self.t0 = time.perf_counter()

    def lap(self) -> None:
        elapsed = time.perf_counter() - self.t0
        self.seconds += elapsed
        self.since += elapsed

    def rate(self, step: int, batch_size: int) -> float:
        rows = (step - self.last) * batch_size / max(self.since, 1e-9)
        self.last, self.since = step, 0.0
        return rows

    def restart(self) -> None:
        self.t0 = time.perf_counter()


def _stop(step: int, signum: int, save_checkpoint: Callable[[int], Path], log: Callable[[str], Any]) -> None:
    """A signal arrived: checkpoint the finished step and stop (a rerun resumes from it)."""
    t1 = time.perf_counter()
    path = save_checkpoint(step)
    log(
        f"signal {signum} at step {step}: checkpoint {path} written in "
        f"{time.perf_counter() - t1:.1f} s; stopping (a rerun resumes from it)"
    )
    raise Preempted(f"stopped by signal {signum} after step {step}; checkpoint {path}", signum)
