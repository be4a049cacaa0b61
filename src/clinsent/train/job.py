"""One train job as plain values (:class:`TrainJob`): what the train rule's script hands to
:func:`clinsent.train.trainer.train`, run in the job's own process, or written once for torch's
launcher to hand to each of the job's processes (:mod:`clinsent.train.launch`,
:mod:`clinsent.train.worker`).

Its ``params`` are the job's params as the rule passes them (the method's typed settings as
plain values, the curve sets, the base model: what its output depends on); the rest is how it runs
(threads, processes, nodes, progress lines, trackers) and where it may write and must not
(the guarded writer's rules, which every process of the job inherits)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

JOB_FILE = "job.json"  # the job, as every process of it reads it
RESULT_FILE = "result.pt"  # process 0's result (the curve and the record), for the job's own process
OURS = "[clinsent] "  # our log lines in the processes' output, told apart from the libraries' own

if TYPE_CHECKING:
    from collections.abc import Callable

    from clinsent.train.processes import Processes
    from clinsent.train.trainer import TrainResult


@dataclass(frozen=True)
class TrainJob:
    """One train job: its params, its inputs and output, and how it runs."""

    params: dict[str, Any]  # method, base_model, eval_sets, selection_set, eval_max_length, notes, checkpoint_dir
    inputs: dict[str, Any]  # the rule's named inputs (a path or a list of paths)
    model: str  # the output model folder
    seed: int
    threads: int = 1
    processes: int = 1
    nodes: int = 1
    progress_steps: int = 0
    progress_seconds: float = 30.0
    tracking: list[str] = field(default_factory=list)
    plugins: list[str] = field(default_factory=list)  # the config's plugins (methods registered outside)
    owned: list[str] = field(default_factory=list)  # where the job may write (the guarded writer)
    protected: list[str] = field(default_factory=list)  # what it must never write over (its inputs)

    @classmethod
    def of(cls, smk: Any) -> TrainJob:
        """The train rule's job (its params, inputs, output and log, as Snakemake gives them)."""
        from clinsent.config.sections import RunConfig

        config = RunConfig.parse(getattr(smk, "config", None) or {})  # the job's door, as setup_logging's
        keys = ("method", "base_model", "eval_sets", "selection_set", "eval_max_length", "notes", "checkpoint_dir")
        progress = smk.params.progress.value
        return cls(
            params={k: getattr(smk.params, k) for k in keys},
            inputs={k: _plain(v) for k, v in smk.input.items()},
            model=str(smk.output.model),
            seed=int(smk.wildcards.seed),
            threads=int(smk.threads),
            processes=int(smk.params.processes.value),
            nodes=int(smk.params.nodes.value),
            progress_steps=int(progress.train_steps),  # logs only: untracked params
            progress_seconds=float(progress.train_seconds),
            tracking=list(smk.params.tracking.value),  # event files beside the run: untracked too
            plugins=list(config.plugins),
            owned=[str(p) for p in [*([config.results] if config.results else []), *smk.output, *smk.log]],
            protected=[str(p) for p in smk.input],
        )

    @property
    def across(self) -> int:
        """The job's processes in all (1: it runs in the job's own process)."""
        return self.processes * self.nodes

    def spread(self) -> bool:
        """Whether the job runs over several processes: more than one asked for, and a method that
        trains (an untrained one is wrapped and saved in the job's own process)."""
        from clinsent.methods.config import method_from_params

        return self.across > 1 and method_from_params(self.params["method"]).trains

    def dumps(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def loads(cls, text: str) -> TrainJob:
        return cls(**json.loads(text))

    def run(self, log: Callable[[str], Any], processes: Processes | None = None) -> TrainResult:
        """Train: read the method's data, then :func:`clinsent.train.trainer.train` (in this
        process, or as one of the job's processes)."""
        from clinsent.methods.config import method_from_params
        from clinsent.tasks.config import task_from_params
        from clinsent.train.trainer import steps_from_epochs, train

        p = self.params
        method = method_from_params(p["method"])  # typed: the objective's settings, the runs its loss loads
        eval_sets = {name: task_from_params(name, e) for name, e in p["eval_sets"].items()}
        need = method.data_need()
        data = need.load(dict(self.inputs), self.seed) if method.trains and need is not None else None
        method = steps_from_epochs(method, data)  # epochs over training rows: steps from the rows read
        return train(
            method,
            p["base_model"],
            self.model,
            eval_sets,
            p["selection_set"],
            data=data,
            seed=self.seed,
            log=log,
            checkpoint_dir=p["checkpoint_dir"],
            progress_every=self.progress_steps,
            progress_seconds=self.progress_seconds,
            tracking=self.tracking,
            eval_max_length=p["eval_max_length"],
            notes=p["notes"],
            processes=processes,
        )

    def reference(self) -> str:
        """The paper and equation the method's card cites."""
        from clinsent.methods.config import method_from_params

        return method_from_params(self.params["method"]).reference

    def work(self) -> Path:
        """The job's working folder (its checkpoints and the selected model until it is placed)."""
        from clinsent.io.files import work_folder

        given = self.params["checkpoint_dir"]
        return Path(given) if given else work_folder(self.model)

    def handoff(self) -> Path:
        """The folder where the job's processes find the job and process 0 leaves its result for
        the job's own process (beside the checkpoints, inside the results folder)."""
        where = Path(self.params["checkpoint_dir"] or Path(self.model).parent / ".checkpoints")
        return where.with_name(f"{where.name}.launch")


def leave_result(result: Any, job: TrainJob) -> None:
    """Process 0's result for the job's own process, through the guarded writer into the job's
    folder."""
    import torch

    from clinsent.io.files import atomic_path

    with atomic_path(job.handoff() / RESULT_FILE) as tmp:
        torch.save(result, tmp)


def _plain(value: Any) -> Any:
    """A Snakemake input as plain values: a path, or a list of paths."""
    if isinstance(value, (str, Path)):
        return str(value)
    return [str(v) for v in value]
