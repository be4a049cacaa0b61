"""A train job over several processes, started by torch's own launcher from the job's process.

The train rule's script runs in one process (the job's: it holds the job's GPU slots, its
outputs' one-writer locks and its log). Where ``training.processes`` or ``training.nodes`` asks
for more than one process, it writes the job (:class:`clinsent.train.job.TrainJob`) into a
folder beside the checkpoints and starts torch's launcher, ``python -m torch.distributed.run``:

- on one node ``--standalone --nproc-per-node N``: N processes on this machine, one per device of
  the job's slots (``CUDA_VISIBLE_DEVICES``), or sharing the CPU with gloo where there is none;
- across nodes (Slurm) ``srun --nodes M --ntasks-per-node 1`` starts one launcher per node of the
  allocation, each with ``--nnodes M --nproc-per-node N`` and a c10d rendezvous on the first node
  (``--rdzv-id`` the Slurm job's id).

Each process runs :mod:`clinsent.train.worker`. Their lines come back through the launcher's
output into the job's log (process 0's progress and evaluations; the others' warnings and errors,
each line prefixed with its rank); the libraries' own output and the launcher's go to the log file
only, as a one-process job's do. Process 0 leaves the selected model in the job's working folder and
its result (the curve and the record) in the folder; the job's process, the one writer of the job's
outputs (it holds their locks, taken once; no process it starts takes the results lock or writes an
output), then places the model and writes the card, the curve and the record, and removes the
folder.

Stopping: a SIGTERM (Slurm's preemption, Snakemake's interrupt) or a Ctrl-C is passed to the launcher, which
passes it to every process; they agree on the step to stop after (:meth:`Processes.agree`),
process 0 checkpoints, and they exit. The job's process waits for the launcher to end, then exits
with 143 itself: a rerun resumes from the checkpoint on the same process count.

The threads of the job (``training.threads``) are split between its processes (``OMP_NUM_THREADS``
and ``torch.set_num_threads`` in each).
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from clinsent.errors import InputError
from clinsent.train.job import JOB_FILE, OURS, RESULT_FILE, TrainJob

RDZV_PORT = 29_500  # the c10d rendezvous's port on the first node
# how long the launcher lets its processes checkpoint after a SIGTERM before it kills them (its
# default, 30 s, can be shorter than writing a BERT-base checkpoint with its optimiser state)
SHUTDOWN_SECONDS = 300


def launcher_command(job: TrainJob, spec: Path, environ: Mapping[str, str] = os.environ) -> list[str]:
    """torch's launcher for ``job`` (see the module): one node, or every node of a Slurm allocation."""
    worker = ["-m", "clinsent.train.worker", str(spec)]
    run = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        f"--nproc-per-node={job.processes}",
        f"--shutdown-timeout={SHUTDOWN_SECONDS}",
    ]
    if job.nodes == 1:
        return [*run, "--standalone", *worker]
    nodelist, job_id = environ.get("SLURM_JOB_NODELIST"), environ.get("SLURM_JOB_ID")
    if not nodelist or not job_id:
        raise InputError(
            "training.nodes",
            f"a job across {job.nodes} nodes is started by srun inside a Slurm allocation, and this job has none "
            "(no SLURM_JOB_NODELIST)",
            "run it through the Slurm profile (--profile profiles/slurm), or set training.nodes: 1",
        )
    first = first_host(nodelist)
    return [
        "srun",
        f"--nodes={job.nodes}",
        "--ntasks-per-node=1",
        *run,
        f"--nnodes={job.nodes}",
        "--rdzv-backend=c10d",
        f"--rdzv-endpoint={first}:{RDZV_PORT}",
        f"--rdzv-id={job_id}",
        *worker,
    ]


def first_host(nodelist: str, run: Callable[..., Any] = subprocess.run) -> str:
    """The first host of a Slurm node list (``scontrol show hostnames`` expands ``node[01-04]``)."""
    out = run(["scontrol", "show", "hostnames", nodelist], capture_output=True, text=True, check=False, timeout=60)
    hosts = str(out.stdout).split()
    return hosts[0] if hosts else nodelist.split(",")[0]


def launch(job: TrainJob, log: Callable[[str], Any]) -> Any:
    """Run ``job`` over its processes (see the module); returns process 0's
    :class:`~clinsent.train.trainer.TrainResult`. Raises :class:`clinsent.train.loop.Preempted`
    where a SIGTERM stopped it after a checkpoint."""
    import torch

    from clinsent.io.files import write_text
    from clinsent.safety.guard import claim
    from clinsent.train.loop import STOP_SIGNALS, Preempted
    from clinsent.train.trainer import place_model

    folder = claim(job.handoff())  # the guarded writer: inside the job's results folder
    shutil.rmtree(folder, ignore_errors=True)  # a killed job's: the job is written anew
    folder.mkdir(parents=True, mode=0o700)
    spec = folder / JOB_FILE
    write_text(job.dumps(), spec)
    command = launcher_command(job, spec)
    per_process = max(1, job.threads // job.processes)
    env = {**os.environ, "OMP_NUM_THREADS": str(per_process), "CLINSENT_TRAIN_THREADS": str(per_process)}
    log(
        f"processes: {job.processes} per node x {job.nodes} node{'s' if job.nodes > 1 else ''}, started by torch's "
        f"launcher ({'torchrun --standalone' if job.nodes == 1 else 'srun + torchrun, c10d rendezvous'}); "
        f"{per_process} thread{'s' if per_process > 1 else ''} each"
    )
    stopped: dict[str, int] = {}
    child = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace", env=env
    )

    def forward(signum: int, _frame: Any) -> None:  # the launcher passes it to every process
        stopped["signal"] = signum
        child.send_signal(signum)

    main_thread = threading.current_thread() is threading.main_thread()
    previous = {s: signal.signal(s, forward) for s in STOP_SIGNALS} if main_thread else {}
    try:
        assert child.stdout is not None
        chatter = logging.getLogger("torch.distributed.run")  # the log file only, as a one-process job's
        for line in child.stdout:
            if line.startswith(OURS):
                log(line.removeprefix(OURS).rstrip())
            elif line.strip() and not _launcher_chatter(line):
                chatter.info("%s", line.rstrip())
        code = child.wait()
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    result = folder / RESULT_FILE
    if code == 0 and result.is_file():
        value = torch.load(result, weights_only=False)
        place_model(job.work(), Path(job.model))  # by this process, the outputs' one writer
        shutil.rmtree(folder, ignore_errors=True)
        return value
    if stopped:
        raise Preempted(
            f"stopped by signal {stopped['signal']}: the processes checkpointed and exited", stopped["signal"]
        )
    raise RuntimeError(
        f"the job's {job.across} training processes failed (torch's launcher exited with {code}); "
        "each process's error is in the lines above, prefixed with its rank"
    )


def _launcher_chatter(line: str) -> bool:
    """The launcher's own banner about OMP_NUM_THREADS (set here already) is left out of the log."""
    return "OMP_NUM_THREADS" in line or line.startswith("*****")
