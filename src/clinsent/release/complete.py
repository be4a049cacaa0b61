"""Whether the release copies are whole: the ``release`` rule's output is one folder to Snakemake,
which never looks inside it, so a copy that lost a file (a tokenizer deleted by hand, a copy cut
short) would stand as done. A run's main process checks each copy against its model folder and,
where one lacks a file, removes the release folder, so the ``release`` job makes it again."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any


def incomplete(runs: Sequence[Mapping[str, Any]], out: str | Path) -> list[str]:
    """The release copies under ``out`` (where it exists) that lack a file of their model folder or
    their card, each as "<folder>: <n> file(s) missing": the release folder is one output to
    Snakemake, which does not look inside it, so a copy emptied by hand would stand as done."""
    out = Path(out)
    if not out.is_dir():
        return []
    found = []
    for run in runs:
        model, copy = Path(run["model"]), out / str(run["folder"])
        if not model.is_dir():
            continue  # its model is still to be made: the release reruns after it in any case
        wanted = {
            p.relative_to(model) for p in model.rglob("*") if p.is_file() and not p.name.startswith(".snakemake")
        }
        wanted.add(Path("README.md"))
        lacking = [w for w in wanted if not (copy / w).is_file()]
        if lacking:
            found.append(f"{run['folder']}: {len(lacking)} file(s) missing (first: {sorted(lacking)[0]})")
    return found


def renew_incomplete(runs: Sequence[Mapping[str, Any]], out: str | Path, tell: Callable[[str], Any] = print) -> None:
    """Where a release copy is incomplete (:func:`incomplete`), the release folder is removed, so
    the ``release`` job makes it again (a run's main process, as the input keys are kept), with one
    line saying why."""
    missing = incomplete(runs, out)
    if missing:
        from clinsent.safety.guard import claim

        tell(f"release copies incomplete ({'; '.join(missing[:3])}): the release is made again")
        shutil.rmtree(claim(out))
