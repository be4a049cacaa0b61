"""Stale by content, not by clock: the raw inputs' key files, kept by a run's main process.

Snakemake reruns a job when one of its inputs is newer than its outputs; it compares content
only for files under 1 MB. A notes file, eval set or model folder replaced with its old
modification time (``cp -p``, ``rsync -t``, ``touch -r``, an unpacked archive) would leave every
result built from the old one standing, and a large file touched but unchanged would rerun
everything built from it. So a raw input never enters a job by its own time: it is declared
``ancient()``, beside its key file ``<results>/inputs/<name>.key``
(:meth:`clinsent.plan.files.RunFiles.keyed`), and :func:`record_input_keys` rewrites a key file
only when the input's content key changes (:mod:`clinsent.safety.stamps`: hashed only when a
file's stat changed, as git's index does). Snakemake's own time check then reruns exactly what
depends on a changed input, with or without ``.snakemake/metadata``, and nothing else.

Only Snakemake's main process (a run, a dry run) stats, hashes and writes key files
(``workflow.is_main_process``, as :func:`clinsent.plan.checks.build_plan`'s ``read_inputs``);
a job, on this machine or a cluster node, reads the recorded key (:func:`read_key`) and never
hashes. A key file is written atomically, through the guarded writer; a new one takes the
input's newest modification time, so a results folder whose ``inputs/`` was removed reruns
nothing that is not otherwise stale.

A job's outputs cannot outlive the content it read (:func:`add_content_params`): each job's params
hold the content keys of its raw inputs as its run recorded them when it started. Snakemake writes
a job's params into its metadata when the job ends, as planned, whereas it touches the outputs and
records the key files' checksums as they are then; so an input edited while a job ran, and
recorded by a dry run meanwhile, leaves a job whose outputs are newer than the new key but whose
params name the old content: the next dry run reruns it, saying its params changed.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from clinsent.errors import InputError
from clinsent.io.files import write_json, write_text
from clinsent.runner.untracked import Untracked
from clinsent.safety.stamps import key_of, recorded

if TYPE_CHECKING:
    from clinsent.plan.files import RawInput
    from clinsent.plan.layout import Plan
    from clinsent.plan.rules.base import Rule

# key file -> the content key this process recorded (a run's or dry run's main process): what its
# jobs' params name, whatever another process writes into the key file afterwards
_RECORDED: dict[str, str] = {}


@dataclass(frozen=True)
class Recorded:
    """What :func:`record_input_keys` found for one raw input."""

    raw: RawInput
    state: str  # "new" (no key before), "changed" (another content), "same"
    hashed: int  # bytes read


def _read(path: str) -> Any:
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _plain_file(path: str, what: str) -> None:
    """A key file or stat record that is a folder (or another non-file) is one line, not the
    writer's traceback."""
    if os.path.lexists(path) and (os.path.islink(path) or not os.path.isfile(path)):
        raise InputError(
            path,
            f"is not a plain file where the tool keeps an input's {what}",
            "remove it (the next dry run records the input again); nothing was written",
        )


def record_one(raw: RawInput) -> Recorded:
    """Bring one raw input's key file and stat record up to date (see the module). A missing key
    file is never taken from the input's times alone: where the stat record of the last run is
    there, the content is compared with the keys it recorded, and an input that changed since is
    "changed" (what is built from it reruns), whatever its modification time says."""
    _plain_file(raw.key, "key")
    _plain_file(raw.stat, "stat record")
    last = _read(raw.stat)
    try:
        keyed = key_of(raw.path, last)
    except OSError as exc:
        raise InputError(
            f"config: {raw.keys[0]}",
            f"{raw.path} cannot be read to compute its content key ({os.strerror(exc.errno) if exc.errno else exc})",
            "make the file (and every file of a folder) readable by this user",
        ) from None
    summary = {"input": os.path.abspath(os.path.expanduser(raw.path)), **keyed.summary()}
    before = _read(raw.key)
    state = "same" if before == summary else "new" if not isinstance(before, dict) else "changed"
    if state == "new" and _changed_since(last, keyed.files):  # the key file was lost, the record was not
        state = "changed"
    if state != "same":
        write_text(json.dumps(summary, sort_keys=True) + "\n", raw.key)
        if state == "new" and keyed.newest > 0:  # the input's own time: a lost key reruns nothing by itself
            os.utime(raw.key, ns=(keyed.newest, keyed.newest))
    if keyed.hashed or state != "same" or not os.path.exists(raw.stat):
        write_json(keyed.record(), raw.stat)
    _RECORDED[raw.key] = keyed.key
    return Recorded(raw, state, keyed.hashed)


def planned_key(raw: RawInput) -> str:
    """The content key of ``raw`` as this run recorded it: the main process's own, kept in memory
    (a dry run started in another terminal that rewrites the key file changes nothing this run
    planned); in a job's own re-parse (a cluster node) the key file's; "" where neither is."""
    if raw.key in _RECORDED:
        return _RECORDED[raw.key]
    summary = _read(raw.key)
    return str(summary.get("sha256", "")) if isinstance(summary, dict) else ""


def content_params(plan: Plan, rule: Rule) -> Callable[[Any], list[str] | Untracked[list[str]]]:
    """A params function of ``rule``'s jobs: the content keys of the job's raw inputs
    (:func:`planned_key`), sorted: they change with a content alone, not with the config keys that
    name an input (a model added under a new key beside an old one names the same folder) nor
    with its place (a moved input is another input file, which Snakemake sees by itself). For a
    job that reads no raw input, an :class:`Untracked` empty list (Snakemake records it as
    nothing, so such a job's params are unchanged)."""
    from clinsent.plan.rules.base import files_of

    def input_content(wildcards: Any) -> list[str] | Untracked[list[str]]:
        raw = plan.files.raw_inputs
        found = sorted({planned_key(raw[f]) for f in files_of(rule.given(plan, wildcards)) if f in raw})
        return found if found else Untracked([])

    return input_content


def add_content_params(rules: Iterable[Any], plan: Plan, declared: dict[str, Rule]) -> int:
    """Give every Snakemake rule of ``rules`` that the plan declares the param ``input_content``
    (:func:`content_params`), after the rule's own: one place, so no rule can forget it. Returns
    how many rules it was given to."""
    given = 0
    for rule in rules:
        if rule.name in declared:
            rule.set_params(input_content=content_params(plan, declared[rule.name]))
            given += 1
    return given


def _changed_since(last: Any, files: dict[str, tuple[Any, str]]) -> bool:
    """Whether the content keys of the last stat record (where there is one) differ from ``files``'."""
    known = recorded(last)
    return bool(known) and {n: k for n, (_, k) in known.items()} != {n: k for n, (_, k) in files.items()}


def check_key_folder(plan: Plan) -> None:
    """The raw inputs' key folder is a plain folder inside the results folder (a link would put the
    keys, and what reruns, somewhere else), or the dry run stops in one line."""
    results = os.path.realpath(plan.run.results)
    for folder in {os.path.dirname(raw.key) for raw in plan.files.raw_inputs.values()}:
        if not os.path.lexists(folder):
            continue
        if os.path.islink(folder) or not os.path.isdir(folder) or not os.path.realpath(folder).startswith(results):
            raise InputError(
                folder,
                "is not a plain folder inside the results folder (a link, or a file): the inputs' keys would be "
                "kept elsewhere",
                "remove it; the next dry run makes it and records every input again",
            )


def record_input_keys(plan: Plan, log: Callable[[str], Any] = print) -> list[Recorded]:
    """Every raw input's key file brought up to date by the main process of a run or dry run,
    with one line per input whose content changed since the last run (what depends on it reruns)
    and one line for the time spent hashing, when any file was read."""
    start = time.perf_counter()
    check_key_folder(plan)
    found = [record_one(raw) for raw in plan.files.raw_inputs.values()]
    for r in found:
        if r.state == "changed":
            log(
                f"input changed: {', '.join(r.raw.keys)}: {r.raw.path}: its content differs from the last run's "
                "(by content key, whatever its modification time): what is built from it reruns"
            )
    read = sum(r.hashed for r in found)
    if read:
        new = sum(r.state == "new" for r in found)
        log(
            f"content keys of {len(found)} inputs checked in {time.perf_counter() - start:.1f} s "
            f"({_size(read)} read{f'; {new} recorded for the first time' if new else ''}); "
            "an input is read again only when its stat changes"
        )
    return found


def _size(n: int) -> str:
    return f"{n / 1e9:.2f} GB" if n >= 1e9 else f"{n / 1e6:.1f} MB" if n >= 1e6 else f"{n / 1e3:.0f} kB"


def read_key(key_files: Iterable[str | Path], path: str | Path) -> dict[str, Any] | None:
    """The recorded content key of the raw input ``path`` among a job's ``input_keys`` (its key
    file's summary: ``sha256``, ``bytes``, ``folder``), read, never computed: a job never hashes a
    raw input. None where no key file names it (a file the DAG makes: its clock is its own). A file
    whose size is no longer the recorded one changed after the run recorded it: refused."""
    absolute = os.path.abspath(os.path.expanduser(str(path)))
    for file in key_files:
        summary = _read(str(file))
        if not isinstance(summary, dict) or summary.get("input") != absolute:
            continue
        size = summary.get("bytes") if summary.get("folder") else os.path.getsize(absolute)
        if size != summary.get("bytes"):
            raise InputError(
                path,
                f"holds {size} bytes, and this run recorded {summary.get('bytes')} when it started: it changed "
                "while the run was running",
                "run the workflow again: its main process records the input's key anew and reruns what depends on it",
            )
        return summary
    return None
