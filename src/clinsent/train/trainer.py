"""The training loop, with the papers' step-selection protocol. It names no method.

The method (:mod:`clinsent.methods`) builds a loss module that owns its extra modules,
prepares each step's batch on the CPU and returns named loss parts; this loop sums the parts,
optimises, evaluates the curve sets every ``eval_every`` steps (and at the last step), keeps
the step with the best selection-set headline metric as the saved model (MED-SE section 4.4),
and checkpoints. Step 0 is logged for the curve but not selectable, except where it is the
only step (untrained methods; ``steps: 0`` of a trained objective is refused when the config is read).

:func:`train` reads top to bottom: the model on this device (:func:`_build`), the checkpoint it
resumes (:func:`_resume`), the selection protocol (:class:`clinsent.train.selection.Selection`),
the optimisation (:class:`clinsent.train.loop.MethodLoop`, prepared batches a step or two
ahead), the selected model put in place, and the run's record (:func:`_record`).

Why a custom loop rather than sentence-transformers' trainer: MED-SE needs the token states
of the same forward pass as the sentence embedding, entity spans and definitions per row, a
second encoder, and batches fixed in advance by the batch plan (the stock trainer reshuffles
rows and its collator drops non-text columns). Sentence-transformers still provides the model
modules, the tokenizer and the saved model format; the optimiser, schedule and clipping are the
training core's (:mod:`clinsent.optimisation`), shared with fine-tuning and the frozen head.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import torch

from clinsent.config.declare import to_params
from clinsent.data import TrainingData
from clinsent.evaluation import length as eval_length
from clinsent.gpu.hardware import describe, hardware_record
from clinsent.gpu.precision import resolve as resolve_precision
from clinsent.gpu.precision import slow_on
from clinsent.gpu.speed import resolved as resolved_speed
from clinsent.io.files import work_folder
from clinsent.methods.base import Method, rows_source
from clinsent.methods.knobs import TrainedSettings
from clinsent.models.base import load_transformer, resolve_model, sentence_transformer
from clinsent.models.encoder import Encoder
from clinsent.models.pooling import MlpHead, pooling_spec
from clinsent.models.st_config import ends_normalized, module_kinds
from clinsent.models.unpadded import varlen_fallback_note
from clinsent.optimisation import pick_device, seed_everything
from clinsent.safety.guard import claim
from clinsent.tasks.base import Task
from clinsent.train import checkpoint as ckpt
from clinsent.train.loop import MethodLoop, stop_flag
from clinsent.train.processes import Processes
from clinsent.train.selection import Selection, save_model
from clinsent.train.tracking import Trackers

__all__ = ["TrainResult", "steps_from_epochs", "train"]

CURVE_COLUMNS = ["step", "eval_set", "metric", "score", "score_low", "score_high", "loss"]


@dataclass
class TrainResult:
    curve: pd.DataFrame
    selected_step: int
    selection_score: float
    info: dict[str, Any]


@dataclass
class _Built:
    """One job's model on this device: the method with its device-resolved settings, the
    hardware record, the encoder the loss trains, the saved model and the evaluation length."""

    method: Method
    device: torch.device
    record: dict[str, Any]
    encoder: Encoder
    st_model: Any
    evaluated_at: int
    base_modules: list[str]  # the base model's own module kinds (empty: a plain transformers model)


def steps_from_epochs(method: Method, data: TrainingData | None) -> Method:
    """A method trained for ``epochs`` over training rows: its steps, now that the rows are read
    (round(epochs x full batches per epoch), at least 1); any other method as it is."""
    from dataclasses import replace

    s = method.settings
    per_epoch = getattr(data, "per_epoch", None)
    if not isinstance(s, TrainedSettings) or s.epochs is None or per_epoch is None or not rows_source(s):
        return method
    return type(method)(replace(s, steps=max(1, int(round(s.epochs * per_epoch)))))


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
    processes: Processes | None = None,
) -> TrainResult:
    """Train (or, for an untrained method, just wrap) one model and save the selected step to ``out_dir``.

    ``eval_sets``: the curve sets (the selection set among them); ``data``: the method's
    training data (see :mod:`clinsent.data`). ``selection_set`` None keeps the last step (the
    curve then holds the sets marked curve, or the loss alone). ``checkpoint_dir``: where checkpoints and the best
    model so far live (default: a hidden folder beside ``out_dir``); a matching checkpoint there
    is resumed. ``progress_seconds``: a progress line (loss parts, rows/s, ETA) after the first
    step and then at least this often (0: none); ``progress_every``: also one every n steps.
    The curve grows in ``curve.jsonl`` of that folder as the job runs; ``tracking``: trackers
    (:data:`clinsent.train.tracking.TRACKERS`) writing under ``tracking_dir`` (default: ``out_dir``'s
    parent, the run's folder). ``eval_max_length``: the evaluation length
    (:mod:`clinsent.evaluation.length`): the curve sets are scored at it and the model is saved with it.
    ``notes``: what the model card says of the notes trained on (config key, format, length filter).
    ``processes``: this process's place in a job over several (:mod:`clinsent.train.processes`):
    each process embeds its share of every batch (:mod:`clinsent.train.spread`); process 0 alone
    evaluates, checkpoints and leaves the selected model in the working folder, while the others
    wait on the CPU and write nothing; the job's own process then places it (:func:`place_model`).
    """
    if selection_set is not None and selection_set not in eval_sets:
        raise ValueError(f"selection set {selection_set!r} is not among the eval sets {sorted(eval_sets)}")
    base_pooling = method.settings.pooling == "model"  # the base's own pooling kept (else the method's replaces it)
    method = method.with_own_pooling(resolve_model(base_model))
    trained = method.trains
    if trained and data is None:
        raise ValueError(f"objective {method.name} needs training data")
    out_dir = Path(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    work = Path(checkpoint_dir) if checkpoint_dir else work_folder(out_dir)
    seed_everything(seed)  # the same on every process: the same extra modules, the same draws
    main = processes is None or processes.main
    built = _build(method, base_model, eval_max_length, log, processes)
    method, s = built.method, built.method.settings
    settings = {"objective": method.name, **to_params(s), "seed": seed}
    fp = ckpt.fingerprint(  # a checkpoint's curve was scored at its evaluation length: another length starts over
        {**settings, "eval_max_length": built.evaluated_at},
        base_model,
        data.identity() if trained and data is not None else None,
    )
    resumed = _resume(work, fp if trained else None, log, processes)
    curve: list[dict[str, Any]] = list(resumed["curve"]) if resumed else []
    first = resumed["step"] + 1 if resumed else 1
    trackers = Trackers(tracking if main else (), tracking_dir or out_dir.parent, first)
    selection = Selection(
        built.encoder, built.st_model, eval_sets, selection_set, s, built.evaluated_at, work, curve,
        ckpt.read_best(work) if resumed else None, trackers, log, trained,
    ) if main else None  # fmt: skip
    start = time.perf_counter()
    evaluate = _Evaluations(selection, processes)  # process 0 evaluates; the others wait for it
    if resumed is None:
        evaluate(0, {"loss": float("nan")})
    loop: MethodLoop | None = None
    seconds = {"train": 0.0, "checkpoint": 0.0}
    if trained:
        assert data is not None
        loop = _loop(method, built, seed, data, resumed, work, log, processes)
        seconds = _optimise(loop, data, evaluate, _Checkpoints(work, loop, fp, curve, processes), first, trackers,
                            log, progress_every, progress_seconds)  # fmt: skip
    trackers.close()  # events are flushed as they are written: a killed job's are on disk too
    if selection is None:  # not process 0: it wrote nothing, and has nothing to say
        return TrainResult(pd.DataFrame(columns=CURVE_COLUMNS), 0, float("nan"), {})
    _ready_best(work, built.st_model, selection_set, log)
    if processes is None:  # over several processes, the job's own process (the outputs' one writer) places it
        place_model(work, out_dir)
    rows = (s.steps - first + 1) * s.batch_size if trained and isinstance(s, TrainedSettings) else 0
    timing = _timing(seconds, selection.seconds, time.perf_counter() - start, rows)
    info = _record(
        method, built, selection, settings, timing, resumed, loop, eval_max_length, data if trained else None, notes
    )
    info["base_pooling"] = base_pooling
    info["processes"] = _processes_record(processes, s)
    parts = [c for c in dict.fromkeys(k for row in curve for k in row) if c.startswith(("loss_", "stat_"))]
    result_curve = pd.DataFrame(curve, columns=CURVE_COLUMNS + parts)
    return TrainResult(result_curve, selection.best_step, selection.best_score, info)


def _processes_record(processes: Processes | None, s: Any) -> dict[str, Any]:
    """What ran, for the record, the card and the table's note: ``batch 512 over 4 processes of 128``."""
    world = processes.world if processes is not None else 1
    batch = getattr(s, "batch_size", None)
    return {
        "processes": world,
        "backend": processes.backend if processes is not None else None,
        "rows_per_process": batch // world if isinstance(batch, int) else None,
    }


class _Evaluations:
    """The curve sets' evaluations: by process 0 alone (a job over several processes), the
    others waiting on the CPU until it is done."""

    def __init__(self, selection: Selection | None, processes: Processes | None) -> None:
        self.selection, self.processes = selection, processes

    def __call__(self, step: int, losses: dict[str, float]) -> None:
        if self.selection is not None:
            self.selection(step, losses)
        if self.processes is not None:
            self.processes.wait()


def _optimise(
    loop: MethodLoop,
    data: TrainingData,
    selection: Callable[[int, dict[str, float]], None],
    saver: _Checkpoints,
    first: int,
    trackers: Trackers,
    log: Callable[[str], Any],
    progress_every: int,
    progress_seconds: float,
) -> dict[str, float]:
    """The optimisation steps from ``first`` on, stopped cleanly by SIGTERM or Ctrl-C (a preempted job is
    checkpointed): the seconds of the steps and of the checkpoints."""
    with stop_flag() as flag:
        train_seconds = loop.run(
            data,
            selection,
            saver,
            first_step=first,
            stop=flag,
            log=log,
            progress_every=progress_every,
            track=trackers.scalars,
            progress_seconds=progress_seconds,
        )
    return {"train": train_seconds, "checkpoint": saver.seconds}


def _timing(seconds: Mapping[str, float], eval_seconds: float, total: float, rows: int) -> dict[str, Any]:
    """Where a job's time went; ``rows``: the rows this run stepped (after a resume: fewer)."""
    return {
        "train_seconds": round(seconds["train"], 3),
        "eval_seconds": round(eval_seconds, 3),
        "checkpoint_seconds": round(seconds["checkpoint"], 3),
        "total_seconds": round(total, 3),
        "rows_per_second": round(rows / seconds["train"], 2) if seconds["train"] > 0 else None,
    }


def _build(
    method: Method,
    base_model: str,
    eval_max_length: int | str,
    log: Callable[[str], Any],
    processes: Processes | None = None,
) -> _Built:
    """The device, the precision and the model of one job (compile and unpad's auto resolved as
    it runs here); the model saved with the evaluation length, so every later encode reads it.
    Over several processes, each process's own device."""
    device = processes.device() if processes is not None else pick_device()
    method = type(method)(resolved_speed(method.settings, device.type, method.name))
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
    base_modules = module_kinds(resolve_model(base_model))
    normalize = ends_normalized(base_modules)  # the base's unit vectors stay unit vectors
    st_model = sentence_transformer(
        transformer, s.pooling, s.first_layer, device=str(device), head=head, normalize=normalize
    )
    st_model.max_seq_length = evaluated_at
    encoder = Encoder(
        transformer.model,
        transformer.tokenizer,
        s.pooling,
        s.first_layer,
        s.max_length,
        device,
        head=head,
        precision=precision,
        normalize=normalize,
    )
    return _Built(method, device, record, encoder, st_model, evaluated_at, base_modules)


def _resume(
    work: Path, fingerprint: str | None, log: Callable[[str], Any], processes: Processes | None = None
) -> dict[str, Any] | None:
    """The checkpoint in ``work`` that matches this job (None: a fresh start, ``work`` emptied).
    Over several processes process 0 chooses it (and sets aside unsound ones); the others then
    read the same file."""
    resumed = None
    if processes is None or processes.main:
        resumed = ckpt.load_state(work, fingerprint, report=log) if fingerprint is not None else None
        if resumed is None:
            shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True, exist_ok=True)
    if processes is None:
        return resumed
    step = processes.objects(resumed["step"] if resumed else None)[0]
    if processes.main or step is None:
        return resumed
    return ckpt.load_step(work, step)


def _loop(
    method: Method,
    built: _Built,
    seed: int,
    data: TrainingData,
    resumed: dict[str, Any] | None,
    work: Path,
    log: Callable[[str], Any],
    processes: Processes | None = None,
) -> MethodLoop:
    """The optimisation of a trained method, restored from its checkpoint where there is one."""
    s = method.settings
    data.check(s.steps)
    loop = MethodLoop(method, built.encoder, seed, data, log=log, processes=processes)
    if processes is not None:
        rows = getattr(s, "batch_size", 0) // processes.world
        log(f"{processes.describe()}: each embeds {rows} rows of every batch of {getattr(s, 'batch_size', 0)}")
    for line in loop.describe():  # the length buckets, and whether the steps are captured
        log(line)
    if s.varlen_attention and (note := varlen_fallback_note(built.device)):
        log(note)
    if resumed:
        differs = loop.restore(resumed)
        log(f"resumed from the checkpoint at step {resumed['step']} in {work}")
        if differs:
            log(differs)
    return loop


class _Checkpoints:
    """Writes a checkpoint of the loop (its state, the fingerprint and the curve so far), timed.
    Over several processes each gives its random state and process 0 alone writes; the others wait."""

    def __init__(
        self,
        work: Path,
        loop: MethodLoop,
        fingerprint: str,
        curve: list[dict[str, Any]],
        processes: Processes | None = None,
    ) -> None:
        self.work, self.loop, self.fingerprint, self.curve = work, loop, fingerprint, curve
        self.processes = processes
        self.seconds = 0.0

    def __call__(self, step: int) -> Path:
        t0 = time.perf_counter()
        state = self.loop.state(step)  # over several processes: every process's random state gathered
        if self.processes is None or self.processes.main:
            path = ckpt.save_state(self.work, {**state, "fingerprint": self.fingerprint, "curve": self.curve})
        else:
            path = ckpt.state_path(self.work, step)
        if self.processes is not None:
            self.processes.wait()  # the checkpoint is on disk before any process goes on or stops
        self.seconds += time.perf_counter() - t0
        return path


def _ready_best(work: Path, st_model: Any, selection_set: str | None, log: Callable[[str], Any]) -> None:
    """The selected model in the working folder (no selection set, or no finite score at any
    step: the last)."""
    if not (work / ckpt.BEST).exists():
        if selection_set is not None:
            log("no step had a finite selection-set score; saving the last model")
        save_model(st_model, work / ckpt.BEST)


def place_model(work: Path, out_dir: Path) -> None:
    """The selected model of the working folder ``work`` becomes ``out_dir``; the working folder
    goes. By the job's own process, which holds the output's one-writer lock: in a job over
    several processes, after they ended (:func:`clinsent.train.launch.launch`)."""
    claim(out_dir)  # the guarded writer: inside what the job owns, never over an input
    shutil.rmtree(out_dir, ignore_errors=True)
    (work / ckpt.BEST).rename(out_dir)
    shutil.rmtree(work, ignore_errors=True)


def _record(
    method: Method,
    built: _Built,
    selection: Selection,
    settings: dict[str, Any],
    timing: dict[str, Any],
    resumed: dict[str, Any] | None,
    loop: MethodLoop | None,
    eval_max_length: int | str,
    data: TrainingData | None,
    notes: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """The run's record (``selection.json``): what was selected, how long each part took, the
    hardware, the settings, the evaluation length and the model card's training-data line."""
    selection_set = selection.selection_set
    cuda = built.device.type == "cuda"
    return {
        "objective": method.name,
        **built.record,
        "selection_set": selection_set,
        "selection_metric": selection.headline[selection_set] if selection_set else None,
        "selected_step": selection.best_step,
        "selection_score": selection.best_score if selection_set else None,
        **timing,
        "peak_gpu_memory_mb": round(torch.cuda.max_memory_allocated() / 2**20, 1) if cuda else None,
        "resumed_from_step": resumed["step"] if resumed else None,
        "skipped_steps": loop.optimisation.skipped if loop is not None else 0,  # fp16 overflows
        "settings": settings,
        "eval_max_length": built.evaluated_at,  # tokens per text at evaluation (clinsent.evaluation.length)
        # the saved model's modules and the base's (the card says which, and a pooling replaced)
        "modules": [type(m).__name__ for m in built.st_model],
        "base_modules": built.base_modules,
        "eval_max_length_spec": eval_max_length,
        # the model card's line (and, for the notes' sets, their config key, format and length filter)
        "training_data": {**data.summary(), **({"notes_entry": dict(notes)} if notes else {})}
        if data is not None
        else None,
    }
