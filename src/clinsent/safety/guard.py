"""The guard of the one way out: where this process may write, and with which modes.

Every file the tool writes goes through :func:`claim` (the writers of :mod:`clinsent.io.files`,
:func:`~clinsent.io.files.atomic_path`, :class:`~clinsent.io.files.ParquetSink`, the folder writer
:func:`~clinsent.io.files.atomic_folder` (models, release copies, packs, benchmark results) and
the appended logs, call it before they put a file or folder in place; so does every lock and
cache):

- **Inside what the caller owns.** A Snakemake job owns its results folder and its declared
  outputs (:func:`clinsent.runner.smk.setup_logging` calls :func:`own`); the embed command owns the
  ``--out`` file the user named. A path outside (``..`` in a name, a link out) is refused
  (:func:`clinsent.safety.places.inside`'s rule). A process that declared nothing (a library call, a
  test) may write where it is asked.
- **Never over an input.** A job's declared inputs, the embed command's ``--input`` and model
  folder (:func:`protect_inputs`): a target that resolves to one of them, or into an input
  folder, is refused before anything is written.
- **Never through a link.** A target that is itself a symbolic link is refused
  (:func:`clinsent.safety.places.check_not_link`); every inside/outside decision is taken on
  resolved paths.
- **Never in a system tree.** A target in or under ``/etc``, ``/usr``, ``/var`` and the like
  (resolved; the temporary trees excepted) is refused, whatever command writes it
  (:func:`clinsent.safety.places.refused_place`).
- **One writer.** The writers hold the target's exclusive lock for the whole write
  (:func:`clinsent.safety.exclusive.writing_lock`): a second writer of the same output is
  refused at once, naming the process that holds it.
- **Modes.** Inside results the tool sets the modes it needs (owner-only note-text folders:
  :mod:`clinsent.phi.protect`). Outside results no existing folder's mode is changed: a private
  output (of notes, or of an input nobody else can reach: :mod:`clinsent.safety.reach`) bound for
  an existing folder that others can reach is refused before any model loads
  (:func:`private_destination`), naming the folder and the fix; the folders the tool creates for
  it are 0700, the file 0600 (``private=True`` of the writers).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path

from clinsent.errors import InputError
from clinsent.safety.places import check_not_link, refused_place
from clinsent.safety.reach import others_can_reach

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
    check_name_lengths(target)
    check_not_link(target, str(target))
    resolved = target.resolve()
    why = refused_place(resolved)
    if why is not None:
        raise InputError(target, f"{why}: the tool writes no file there", "write it under a folder of your own")
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


NAME_MAX = 255  # bytes of one file or folder name on Linux's file systems
ROOM = 24  # what the tool adds to an output's name for its lock and temporary files


def check_name_lengths(target: Path) -> None:
    """Every name on ``target``'s way fits the file system (255 bytes; the output's own name with
    room for the tool's lock and temporary names), else one line saying which part is too long, by
    its place and length (a name may come from a config value: it is not quoted)."""
    parts = target.parts
    for i, part in enumerate(parts):
        limit = NAME_MAX - (ROOM if i == len(parts) - 1 else 0)
        size = len(os.fsencode(part))
        if size > limit:
            raise InputError(
                f"{Path(*parts[:i])}/<a name of {size} bytes>" if i else f"<a name of {size} bytes>",
                f"part {i + 1} of the path is {size} bytes long; a file system takes at most {limit} there",
                "shorten that name (an entry of the config, a folder or a flag's value); nothing was written",
            )


def discard_stale(path: str | Path) -> None:
    """Remove one of this job's inputs that its check found stale (a sharded corpus embedding's
    part made from another version of the input: :func:`clinsent.embedding.sharded.gather_shards`),
    so the job that makes it runs again. Only a file the DAG makes, inside what this process owns
    (its results folder), never a user's: anything else is refused like a write over an input."""
    target = Path(path)
    check_not_link(target, str(target))
    resolved = target.resolve()
    if not _OWNED or not any(resolved.is_relative_to(o) and resolved != o for o in _OWNED) or resolved.is_dir():
        raise InputError(target, "is not a file of this step's results folder", "refusing to remove it")
    resolved.unlink(missing_ok=True)


def private_destination(out: str | Path, results: str | Path | None = None) -> list[Path]:
    """Make ready the folder of a private output ``out`` (text derived from notes, or from an
    input nobody else can reach), before the model loads. Inside ``results`` the job's note-text
    folder is already owner-only (:mod:`clinsent.phi.protect`): nothing to do. Elsewhere, an
    existing folder that others can reach (:func:`clinsent.safety.reach.others_can_reach`: its
    modes and every folder's above it) is refused (its mode is the user's, never changed here);
    the missing folders are created 0700. Returns the folders it created."""
    target = Path(os.path.realpath(out))
    if results is not None and target.is_relative_to(Path(os.path.realpath(results))):
        return []
    missing, folder = [], Path(os.path.abspath(out)).parent
    while not folder.exists():
        missing.append(folder)
        folder = folder.parent
    if not missing and others_can_reach(folder):
        raise InputError(
            folder,
            f"others can reach this folder (mode {stat.S_IMODE(folder.stat().st_mode):04o}, and every folder above "
            "it lets them through), and the output holds vectors of private texts (notes, or a file nobody else "
            "can reach)",
            "write the output into a folder only you can reach (mkdir -m 700 DIR) or into a new folder, which is "
            "created owner-only; this folder's mode is left as it is",
        )
    for created in reversed(missing):
        created.mkdir(mode=0o700)
        os.chmod(created, 0o700)  # mkdir's mode passes through the umask
    return missing
