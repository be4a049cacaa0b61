"""The one guarded writer: where this process may write, and with which modes.

Every file the tool writes goes through :func:`claim` (:func:`clinsent.io.atomic_path`,
:class:`clinsent.io.ParquetSink` and the folder writer :func:`clinsent.io.atomic_folder` (models, release
copies, packs, benchmark results) call it before they put a file or folder in place):

- **Inside what the caller owns.** A Snakemake job owns its results folder and its declared
  outputs (:func:`clinsent.smk.setup_logging` calls :func:`own`); the embed command owns the
  ``--out`` file the user named. A path outside (``..`` in a name, a link out) is refused
  (:func:`clinsent.names.inside`'s rule). A process that declared nothing (a library call, a
  test) may write where it is asked.
- **Never over an input.** A job's declared inputs, the embed command's ``--input`` and model
  folder (:func:`protect_inputs`): a target that resolves to one of them, or into an input
  folder, is refused before anything is written.
- **Modes.** Inside results the tool sets the modes it needs (owner-only note-text folders:
  :mod:`clinsent.phi.protect`). Outside results no existing folder's mode is changed: a private
  (notes-derived or owner-only) output bound for an existing folder that others can read is
  refused before any model loads (:func:`private_destination`), naming the folder and the fix;
  the folders the tool creates for it are 0700, the file 0600 (``private=True`` of the writers).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path

from clinsent.errors import InputError

_OWNED: list[Path] = []  # resolved folders and files this process may write (empty: not restricted)
_INPUTS: set[Path] = set()  # resolved inputs (files and folders) never written over


def own(*places: str | Path) -> None:
    """Let this process write inside (or at) each of ``places``."""
    for place in places:
        resolved = Path(place).resolve()
        if resolved not in _OWNED:
            _OWNED.append(resolved)


def protect_inputs(paths: Iterable[str | Path]) -> None:
    """Refuse every later write onto (or into) one of ``paths``."""
    _INPUTS.update(Path(p).resolve() for p in paths if str(p))


def reset() -> None:
    """Forget what was owned and protected (a new command in the same process; tests)."""
    _OWNED.clear()
    _INPUTS.clear()


def claim(path: str | Path, inputs: Iterable[str | Path] = ()) -> Path:
    """``path`` when this process may write it (see the module; ``inputs``: more inputs of this
    call), else an :class:`InputError` naming it and the fix; nothing is written either way."""
    target = Path(path)
    resolved = target.resolve()
    protected = [*_INPUTS, *(Path(p).resolve() for p in inputs)]
    hit = next((i for i in protected if resolved == i or resolved.is_relative_to(i)), None)
    if hit is not None:
        raise InputError(
            target,
            "would be written over one of this run's inputs" + ("" if hit == resolved else f" (inside {hit})"),
            "write the output to another path; nothing was written",
        )
    if _OWNED and not any(resolved == o or resolved.is_relative_to(o) for o in _OWNED):
        raise InputError(
            target,
            f"is outside what this step writes ({', '.join(str(o) for o in _OWNED[:3])})",
            "refusing to write it; check the entry names of the config (a name is letters, digits, _, - and .)",
        )
    return target


def others_can_read(folder: Path) -> bool:
    return bool(folder.stat().st_mode & (stat.S_IRGRP | stat.S_IROTH | stat.S_IXGRP | stat.S_IXOTH))


def private_destination(out: str | Path, results: str | Path | None = None) -> list[Path]:
    """Make ready the folder of a private output ``out`` (text derived from notes, or from an
    input others cannot read), before the model loads. Inside ``results`` the job's note-text
    folder is already owner-only (:mod:`clinsent.phi.protect`): nothing to do. Elsewhere, an
    existing folder others can read is refused (its mode is the user's, never changed here);
    the missing folders are created 0700. Returns the folders it created."""
    target = Path(out).absolute()
    if results is not None and target.is_relative_to(Path(results).absolute()):
        return []
    missing, folder = [], target.parent
    while not folder.exists():
        missing.append(folder)
        folder = folder.parent
    if not missing and others_can_read(folder):
        raise InputError(
            folder,
            f"others can read this folder (mode {stat.S_IMODE(folder.stat().st_mode):04o}), and the output holds "
            "vectors of owner-only texts (notes)",
            "write the output into a folder only you can read (mkdir -m 700 DIR) or into a new folder, which is "
            "created owner-only; this folder's mode is left as it is",
        )
    for created in reversed(missing):
        created.mkdir(mode=0o700)
        os.chmod(created, 0o700)  # mkdir's mode passes through the umask
    return missing
