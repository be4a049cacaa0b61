"""Owner-only folders for note text: which results folders hold it (:data:`NOTE_DIRS`), which are
made from the notes, and the protection each job applies as it starts (:func:`protect_job`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from clinsent.config.sections import RunConfig

# results folders (relative to `results`) that hold note text or text derived from it
NOTE_DIRS = (
    "corpus",
    "sets",
    "ner",
    "batches",
    "checkpoints",
    "documents",
    "doc_tasks",
    "training_rows",
    "tokens",  # token ids of the notes are note text (clinsent.data.tokens)
    "sentence_corpora",
    "embeddings",
    "corpus_embeddings",
    "phi",
)


# results folders whose files are made from the notes: an eval set read from one holds note text
NOTES_DERIVED = ("corpus", "sets", "ner", "documents", "doc_tasks")


def derived_from_notes(path: str | Path, results: str | Path, notes: Iterable[str | Path] = ()) -> bool:
    """``path`` is one of the notes' files or lies in a results folder made from them (links
    resolved: a link to a notes-derived file is one)."""
    target = Path(os.path.realpath(path))
    if any(target == Path(os.path.realpath(n)) for n in notes):
        return True
    root = Path(os.path.realpath(results))
    return any(target.is_relative_to(root / d) for d in NOTES_DERIVED)


def protect_dirs(results: str | Path, paths: Iterable[str | Path], mode: int | None) -> list[Path]:
    """Give the note-text folders under ``results`` that ``paths`` (a job's outputs and working
    folders) lie in ``mode``, creating them if needed; None leaves them. Called as each job
    starts, before it writes: a folder only exists once a job of the run writes into it."""
    if mode is None:
        return []
    root = Path(os.path.abspath(results))
    done = []
    for p in paths:
        rel = Path(os.path.abspath(p))
        if not rel.is_relative_to(root) or rel == root:
            continue
        top = root / rel.relative_to(root).parts[0]
        if top.name in NOTE_DIRS and top not in done:
            top.mkdir(parents=True, exist_ok=True, mode=mode)
            os.chmod(top, mode)
            done.append(top)
    return done


def protect_job(smk: Any, config: RunConfig) -> list[Path]:
    """:func:`protect_dirs` for a Snakemake job (its typed config: the results folder, the mode):
    its outputs and any folder param (a checkpoint folder)."""
    results, mode = config.results, config.phi.dir_mode
    if not results:
        return []
    params = getattr(smk, "params", None)
    folders = [v for v in dict(params.items()).values() if isinstance(v, str)] if params is not None else []
    paths = [*getattr(smk, "output", []), *folders]
    return protect_dirs(results, paths, int(mode, 8) if mode else None)
