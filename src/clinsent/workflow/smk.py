"""Helpers for the Snakefile and the thin Snakemake scripts: config errors as the first line a
user sees, logging to the rule's log file, the config's plugins, and the one Snakemake command
line the tests and benchmarks run (:func:`snakemake_command`)."""

from __future__ import annotations

import atexit
import gc
import logging
import sys
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, NoReturn, TypeVar

from clinsent.errors import redact_urls
from clinsent.repository import SNAKEFILE
from clinsent.safety import guard
from clinsent.safety.exclusive import writing_lock

T = TypeVar("T")


@dataclass(frozen=True)
class Untracked(Generic[T]):
    """A setting a job reads that changes none of its outputs (its progress lines, its trackers,
    the words of a model card, where its cache lives), passed in its params: Snakemake compares a
    job's params by the repr of builtin values only, so this one, an object of ours, never
    reruns the job when it changes. Everything else a job reads is a param it is rerun for."""

    value: T


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


_OUTPUTS = ExitStack()  # this job's outputs' one-writer locks, held while it runs


def hold_outputs(smk: Any) -> None:
    """Each of the job's declared outputs and logs under its one-writer lock for the job's life
    (:func:`clinsent.safety.exclusive.writing_lock`, the embed command's rule): a second writer of
    them (a job of another run, one started by hand) is refused at once, in one line naming the
    process that holds it, and writes nothing. The job's writers take the same locks again inside."""
    for path in sorted({str(p) for p in [*getattr(smk, "output", []), *getattr(smk, "log", [])]}):
        _OUTPUTS.enter_context(writing_lock(path))


def release_outputs() -> None:
    """Let go of the job's output locks (their lock files removed): the job has ended."""
    _OUTPUTS.close()


def setup_logging(smk: Any) -> logging.Logger:
    """Tell the guarded writer what the job owns (its results folder and declared outputs) and
    reads (its inputs, never written over: :mod:`clinsent.safety.guard`); make the note-text folder
    the job writes into owner-only (:mod:`clinsent.phi`); hold the job's outputs' and logs'
    one-writer locks (:func:`hold_outputs`); send every log record (and warning) to the rule's
    ``log[0]`` and the package's own lines and any error to the console too; import the config's
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
    return logger


def config_error(exc: BaseException) -> NoReturn:
    """Stop at parse time with ``exc``'s message as the first line on the console (Snakemake's
    own report of an exception in the Snakefile puts the file and line first, and a schema
    failure prints the whole schema)."""
    sys.stderr.write(f"{exc}\n")
    raise SystemExit(1)


def schema_message(exc: BaseException) -> str:
    """One line for a failed ``validate(config, schema)``: the config key, what is wrong, the
    closest allowed key for an unknown one, and where the keys are described."""
    from clinsent.registry import did_you_mean

    linked = [*getattr(exc, "args", ()), exc.__cause__, exc.__context__]  # Snakemake raises inside `except`
    error = next((a for a in linked if hasattr(a, "absolute_path") and hasattr(a, "message")), None)
    if error is None:
        return str(exc).splitlines()[0]
    from clinsent.errors import KEY, shown, shown_value, unknown_key

    where = ".".join(str(p) if KEY.match(str(p)) else f"<{shown(p)}>" for p in error.absolute_path)
    instance = error.instance  # jsonschema's message quotes it: only a number or a plain name is shown
    plain = not isinstance(instance, (str, dict, list)) or (
        isinstance(instance, str) and shown_value(instance) == repr(instance)
    )
    problem = (
        error.message
        if plain or error.validator == "required"
        else f"{shown_value(instance)} is not valid here ({error.validator}: {error.validator_value!r})"
    )
    if error.validator == "uniqueItems" and isinstance(instance, list):
        twice = next((i for i, v in enumerate(instance) if v in instance[:i]), None)
        if twice is not None:
            return (
                f"config: {where}[{twice}]: {shown_value(instance[twice])} is listed twice (it would act twice, "
                "e.g. a tracker writing every scalar twice). Fix: list each once"
            )
    if error.validator == "additionalProperties":
        allowed = sorted(error.schema.get("properties") or {})
        unknown = [k for k in error.instance if k not in allowed] if isinstance(error.instance, dict) else []
        if unknown:
            problem = (
                f"{unknown_key(unknown[0])}{did_you_mean(str(unknown[0]), allowed)}; allowed: {', '.join(allowed)}"
            )
    return f"config: {where or '(top level)'}: {problem}. Fix: see config/README.md for every key and its values"


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
