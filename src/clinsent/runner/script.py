"""The one way a workflow script starts: :func:`run`.

Every script under ``workflow/scripts/`` is a docstring, a ``main(smk, log)`` that imports what
it needs and does its few lines, and ``run(snakemake, main)``. :func:`run` then, in order:

1. hands the job to the warm interpreter where one serves (:func:`clinsent.runner.warm.hand_off`:
   the script runs again in a child that has torch and transformers imported; the imports
   inside ``main`` are what the cold process never pays for), except for the download jobs,
   which turn the hub on for their own process (``warm=False``);
2. sets up the job's logging and the guarded writer (:func:`clinsent.runner.smk.setup_logging`);
3. takes the job's GPU slots where its rule declares a ``gpu`` resource (or ``gres`` across nodes)
   (:func:`clinsent.gpu.slots.slot_of`), before anything imports torch;
4. calls ``main(smk, log)`` (a refusal, :class:`~clinsent.errors.InputError`, logged in one line
   and the job's exit status 2, as the tool's commands), with a SIGTERM (a scheduler's stop,
   Snakemake's when a run is interrupted) or a SIGINT (Ctrl-C) raised as :class:`Stopped`, so
   every writer unwinds (a half-written output's temporary file removed, its lock let go) before
   the job exits with 128 + the signal, in one line and no traceback; the train job checkpoints
   on it instead (:func:`clinsent.train.loop.stop_flag` holds the signal there).
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable
from typing import Any

Main = Callable[[Any, logging.Logger], None]


class Stopped(SystemExit):
    """SIGTERM or SIGINT in a job: raised where the job is, so its writers unwind (exit status
    128 + the signal)."""


def _stopped(signum: int, _frame: Any) -> None:
    raise Stopped(128 + signum)


def run(smk: Any, main: Main, *, warm: bool = True) -> None:
    """Start a job script (see the module docstring) and run its ``main``."""
    if warm:
        from clinsent.runner.warm import hand_off

        hand_off()  # where a warm interpreter serves (CLINSENT_WARM), the rest runs in it
    from clinsent.runner.smk import setup_logging

    log = setup_logging(smk)
    if declares_gpu(smk):
        from clinsent.gpu.slots import slot_of

        slot_of(smk, log.info)  # this job's GPU (CUDA_VISIBLE_DEVICES), before anything starts CUDA
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _stopped)
        signal.signal(signal.SIGINT, _stopped)  # Ctrl-C: one line, not a KeyboardInterrupt traceback
    from clinsent.errors import InputError

    try:
        main(smk, log)
    except InputError as exc:  # a refusal: one line, exit 2 (as the tool's commands); the run exits 1
        log.error("%s failed: %s", smk.rule, exc)
        raise SystemExit(2) from None
    except Stopped as exc:
        name = signal.Signals(int(exc.code or 143) - 128).name
        log.warning("stopped by %s: nothing half-written is left; a rerun starts this job again", name)
        raise
    finally:
        from clinsent.runner.smk import release_outputs

        release_outputs()  # the job's output locks (held since setup_logging)


def declares_gpu(smk: Any) -> bool:
    """Whether the job's rule counts it against ``gpu`` at all (``resources: gpu=...``, 0 included:
    such a job is told it runs on the CPU); a rule without the resource leaves the devices alone."""
    resources = getattr(smk, "resources", None)
    return resources is not None and bool({"gpu", "gres"} & set(resources.keys()))
