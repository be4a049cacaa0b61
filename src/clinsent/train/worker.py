"""One process of a train job over several (``python -m clinsent.train.worker JOB_FILE``), as
torch's launcher starts it (:mod:`clinsent.train.launch`).

It joins the launcher's group (:meth:`clinsent.train.processes.Processes.join`), takes the job's
rules for writing (the guarded writer: where the job may write, its inputs never written over) and
its share of the job's threads, runs the job (:meth:`clinsent.train.job.TrainJob.run`) and, on
process 0, leaves the result for the job's own process. Its log lines go to the launcher's output,
which the job's process copies into the job's log: process 0's lines as a one-process job has them,
the others' warnings and errors only, each prefixed with its rank (marked ``OURS``; the
libraries' own output goes to the log file only, as in a one-process job). A SIGTERM is held until the
step under way ends (every process agrees on the step), then the checkpoint is written and the
process exits with 143.
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

from clinsent.train.job import OURS


class _Marked(logging.Formatter):
    """Our lines and every error marked :data:`OURS` (with the rank of a process other than 0):
    the job's process shows them; the libraries' other lines go to the log file only."""

    def __init__(self, prefix: str) -> None:
        super().__init__("%(message)s")
        self.prefix = prefix

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        if record.name.startswith("clinsent") or record.levelno >= logging.ERROR:
            return f"{OURS}{self.prefix}{text}"
        return text


def main(argv: list[str]) -> int:
    import torch

    from clinsent.errors import InputError
    from clinsent.registry import load_plugins
    from clinsent.safety import guard
    from clinsent.train.job import TrainJob, leave_result
    from clinsent.train.loop import Preempted
    from clinsent.train.processes import Processes

    job = TrainJob.loads(Path(argv[0]).read_text(encoding="utf-8"))
    processes = Processes.join()
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(_Marked("" if processes.main else f"rank {processes.rank}: "))
    logging.basicConfig(level=logging.INFO if processes.main else logging.WARNING, handlers=[handler], force=True)
    log = logging.getLogger(f"clinsent.train.rank{processes.rank}")
    guard.reset()
    guard.own(*job.owned)
    guard.protect_inputs(job.protected)
    load_plugins(job.plugins)
    torch.set_num_threads(int(os.environ.get("CLINSENT_TRAIN_THREADS") or max(1, job.threads // job.processes)))
    try:
        result = job.run(log.info, processes)
    except Preempted as exc:
        log.warning("%s", exc)
        return 128 + exc.signum
    except InputError as exc:
        log.error("train failed: %s", exc)
        return 2
    if processes.main:
        leave_result(result, job)
    processes.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
