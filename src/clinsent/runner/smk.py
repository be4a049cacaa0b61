"""Helpers for the Snakefile and the thin Snakemake scripts: config errors as the first line a
user sees, logging to the rule's log file, the config's plugins, and the one Snakemake command
line the tests and benchmarks run (:func:`snakemake_command`)."""

from __future__ import annotations

import atexit
import gc
import logging
import sys
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from clinsent.errors import InputError, redact_urls
from clinsent.process.heartbeat import Heartbeat
from clinsent.repository import SNAKEFILE
from clinsent.safety import guard
from clinsent.safety.exclusive import writing_lock

if TYPE_CHECKING:
    from clinsent.plan.layout import Plan


def snakemake_command(workdir: str | Path, *args: str) -> list[str]:
    """This workflow's Snakemake run in ``workdir`` with ``args``, by this interpreter (the tests'
    and the benchmarks' one way to start it; the workflow's own profile applies)."""
    return [sys.executable, "-m", "snakemake", "-s", str(SNAKEFILE), "--directory", str(workdir), *args]


def _redacted(record: logging.LogRecord) -> bool:
    """Every log line with its URLs' user information and query strings redacted
    (:func:`clinsent.errors.redact_urls`): a library's line too."""
    message = record.getMessage()
    shown = redact_urls(message)
    if shown != message:
        record.msg, record.args = shown, None
    return True


def _ours_or_errors(record: logging.LogRecord) -> bool:
    return record.name.startswith("clinsent") or record.levelno >= logging.ERROR


_OUTPUTS = ExitStack()  # this job's outputs' one-writer locks, held while it runs; its heartbeat


def hold_outputs(smk: Any) -> None:
    """Each of the job's declared outputs and logs under its one-writer lock for the job's life
    (:func:`clinsent.safety.exclusive.writing_lock`, the embed command's rule): a second writer of
    them (a job of another run, one started by hand) is refused at once, in one line naming the
    process that holds it, and writes nothing. The job's writers take the same locks again inside."""
    for path in sorted({str(p) for p in [*getattr(smk, "output", []), *getattr(smk, "log", [])]}):
        _OUTPUTS.enter_context(writing_lock(path))


def release_outputs() -> None:
    """Let go of the job's output locks (their lock files removed) and stop its heartbeat: the
    job has ended."""
    _OUTPUTS.close()


def setup_logging(smk: Any) -> logging.Logger:
    """Tell the guarded writer what the job owns (its results folder and declared outputs) and
    reads (its inputs, never written over: :mod:`clinsent.safety.guard`); make the note-text folder
    the job writes into owner-only (:mod:`clinsent.phi`); hold the job's outputs' and logs'
    one-writer locks (:func:`hold_outputs`); send every log record (and warning) to the rule's
    ``log[0]`` and the package's own lines and any error to the console too, with a line at least
    every ``progress.heartbeat_seconds`` (:mod:`clinsent.process.heartbeat`); import the config's
    ``plugins`` (methods and tasks registered outside the package)."""
    from clinsent.config.sections import RunConfig
    from clinsent.phi import protect_job
    from clinsent.registry import load_plugins

    config = RunConfig.parse(getattr(smk, "config", None) or {})  # the job's door: its config, typed
    guard.reset()
    guard.own(
        *([config.results] if config.results else []),
        *getattr(smk, "output", []),
        *getattr(smk, "log", []),
    )
    guard.protect_inputs(str(p) for p in getattr(smk, "input", []))
    protect_job(smk, config)  # the note-text folder it writes into is owner-only before it writes
    load_plugins(config.plugins)
    log_path = Path(smk.log[0]) if len(smk.log) else None
    console = logging.StreamHandler(sys.stderr)
    if log_path is not None:  # the console shows our lines and errors; libraries' chatter (MedCAT's
        console.addFilter(_ours_or_errors)  # "Current progress", spaCy's FutureWarning) stays in the log
    fmt = "%(asctime)s %(name)s %(levelname)s %(message)s"
    console.addFilter(_redacted)
    logging.basicConfig(level=logging.INFO, format=fmt, handlers=[console], force=True)
    logging.captureWarnings(True)
    logger = logging.getLogger(f"clinsent.{smk.rule}")
    _OUTPUTS.close()  # a job set up again in one process (tests): the last one's heartbeat stops
    heartbeat = Heartbeat(logger.info, config.progress.heartbeat_seconds, smk.rule)
    console.addFilter(heartbeat)  # last: only the lines the console shows count
    _OUTPUTS.callback(heartbeat.stop)

    def _log_uncaught(exc_type: Any, exc: BaseException, tb: Any) -> None:
        from clinsent.errors import InputError, OutputError

        if isinstance(exc, (InputError, OutputError)):  # bad input or a full disk: the one line says it all
            logger.error("%s failed: %s", smk.rule, exc)
        else:
            logger.error("%s failed", smk.rule, exc_info=(exc_type, exc, tb))

    sys.excepthook = _log_uncaught
    hold_outputs(smk)  # before the log is opened (mode w): another writer's log is never truncated
    if log_path is not None:
        guard.claim(log_path).parent.mkdir(parents=True, exist_ok=True)
        handler = logging.FileHandler(log_path, mode="w")
        handler.setFormatter(logging.Formatter(fmt))
        handler.addFilter(_redacted)
        logging.getLogger().addHandler(handler)
    # free Arrow's objects while Arrow is alive: a parquet reader thread left to the interpreter's
    # final teardown can abort a job that has done its work (SIGABRT, "terminate called without an
    # active exception"; apache/arrow#34314, seen once in corpus_stats)
    atexit.register(gc.collect)
    heartbeat.start()
    return logger


def set_up_run(plan: Plan, main_process: bool, say: Callable[[str], Any] | None = None) -> int:
    """What every parse of the Snakefile does once the plan is open (``workflow/rules/common.smk``),
    each step's error an :class:`InputError` (or ``OSError``) for :func:`config_error`:

    - the results folder can be written (a dry run stops, not a job);
    - in the main process (a run, a dry run) the raw inputs' key files brought up to date, one line
      per input that changed (:mod:`clinsent.runner.staleness`);
    - the steps derived from epochs said (every dry run shows them);
    - offline by construction: every job inherits the network switches, whatever the config; a
      model named by a Hugging Face id is fetched by the local rule ``download_model``, the one job
      that turns the network on for itself, and every job loads it from ``hub_dir``;
    - one GPU per model job on this machine, ``training.processes`` per train job
      (:mod:`clinsent.gpu.pool`, :mod:`clinsent.gpu.slots`): the pool goes to every job in the
      environment, not in params (it changes no output).

    Returns the ``gpu`` an embed job counts against: 1 where it can use one of the pool, else 0,
    so a CPU-only run keeps its parallelism."""
    import os

    from clinsent.gpu.pool import export_pool, resolve_pool
    from clinsent.gpu.slots import LOCK_DIR_ENV, check_lock_dir
    from clinsent.models.base import HUB_DIR_ENV
    from clinsent.plan.checks import check_processes
    from clinsent.process.offline import set_network_switches
    from clinsent.runner.staleness import record_input_keys
    from clinsent.safety.places import check_writable

    tell = say or (lambda line: print(line, file=sys.stderr))
    check_writable(plan.run.results)
    if main_process:
        record_input_keys(plan, tell)
    for line in plan.run.derived:
        tell(line)
    set_network_switches(())
    os.environ[HUB_DIR_ENV] = os.path.abspath(plan.files.hub_dir)
    if plan.run.hub_models:
        tell(
            f"models named by Hugging Face id, fetched by the local rule download_model into {plan.files.hub_dir}/ "
            f"unless already there: {', '.join(plan.run.hub_models)} (a local folder needs no download)"
        )
    config = plan.run.config
    pool = resolve_pool(config.gpus)
    if main_process:  # a release copy that lacks a file of its model is made again (its folder is one output)
        from clinsent.release.complete import renew_incomplete

        renew_incomplete(plan.release_runs(), plan.release_dir(), tell)
    if main_process:  # a train job's processes: one device each where the run's pool has devices (a
        check_processes(plan, pool)  # job's own re-parse sees only the devices its scheduler gave it)
    if pool or os.environ.get(LOCK_DIR_ENV):  # the jobs' lock folder: outside results, writable
        check_lock_dir(plan.run.results)
    export_pool(pool, explicit=config.gpus is not None)
    return 1 if pool and config.embed_device != "cpu" else 0


SCHEDULER_COMMANDS = {"slurm": ("sbatch", "squeue", "scancel")}  # what each cluster executor calls


def check_executor(workflow: Any, which: Callable[[str], str | None] | None = None) -> None:
    """When a run starts executing (the workflow's ``onstart``): a cluster executor whose commands
    this host lacks (the Slurm profile where Slurm is not installed) stops the run once, before any
    job is submitted, in one line with the fix, rather than one failed submission per job."""
    import shutil

    plugin = getattr(workflow, "executor_plugin", None)
    name = str(getattr(plugin, "name", "") or "")
    needed = SCHEDULER_COMMANDS.get(name, ())
    missing = [c for c in needed if (which or shutil.which)(c) is None]
    if missing:
        raise InputError(
            f"--executor {name}",
            f"this host has no {', '.join(missing)}: {name.capitalize()}'s client commands are not installed here",
            f"run from a host of the cluster (its login node), or run locally without the {name} profile "
            "(snakemake all --cores N)",
        )


def config_error(exc: BaseException) -> NoReturn:
    """Stop at parse time with ``exc``'s message as the first line on the console (Snakemake's
    own report of an exception in the Snakefile puts the file and line first, and a schema
    failure prints the whole schema)."""
    sys.stderr.write(f"{exc}\n")
    raise SystemExit(1)


def cache_signatures(rules: Any) -> int:
    """Give every input and params function of ``rules`` its signature once.

    Snakemake inspects a function's signature each time it calls it (to learn which of
    wildcards, input, output, threads, resources it takes): about 24,000 ``inspect.signature``
    calls in a dry run of the MED-SE grid. Its own ``overwrite_function_params`` stores the
    parameters on the function, where it looks first. Returns how many functions it touched;
    with a Snakemake that lacks the hook, none (nothing changes but the speed).
    """
    import inspect

    try:
        from snakemake.common import overwrite_function_params
    except ImportError:
        return 0
    done = 0
    for rule in rules:
        for item in [*rule.input, *rule.params]:
            func = getattr(item, "callable", None) or item  # a wrapped input function, or the function
            if inspect.isfunction(func):
                overwrite_function_params(func, inspect.signature(func).parameters)
                done += 1
    return done


def check_scripts_once() -> bool:
    """Have Snakemake check that a rule's script exists once per rule, not once per job.

    Building the DAG, Snakemake resolves and reads each job's ``script:`` file only to check
    that it exists (``snakemake.dag.ScriptProcessor``): 1,658 reads in a dry run of the MED-SE
    grid, whose scripts name no wildcard. A script path with a wildcard is still checked per
    job; one without is checked for the first job of its rule in this process (a Snakemake run
    is one process, and the file the check found stays where it is during it). Returns whether
    the hook was placed; with a Snakemake that lacks the processor, nothing changes but the speed.
    """
    try:
        import snakemake.api  # noqa: F401  (snakemake.dag or .workflow first is a circular import)
        from snakemake.dag import ScriptProcessor
    except ImportError:
        return False
    if getattr(ScriptProcessor.process_job, "_clinsent_once", False):
        return True
    per_job = ScriptProcessor.process_job
    checked: set[tuple[str, str]] = set()

    def process_job(self: Any, job: Any) -> None:
        entry = str(getattr(job.rule, self.script_type, None) or "")
        key = (self.script_type, f"{job.rule.basedir}:{entry}")
        if entry and "{" not in entry and key in checked:
            return
        per_job(self, job)
        if entry:
            checked.add(key)

    process_job._clinsent_once = True  # type: ignore[attr-defined]
    ScriptProcessor.process_job = process_job
    return True
