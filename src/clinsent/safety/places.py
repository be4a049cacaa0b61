"""Where the tool may write, one rule for every command and every output.

- **No file in a system tree.** Every file the tool writes passes the guard
  (:func:`clinsent.safety.guard.claim` calls :func:`refused_place`): resolved (links followed,
  ``..`` taken), it does not lie in or under a system folder (:data:`SYSTEM`: ``/etc``, ``/usr``,
  ``/var``, ``/dev``, ...). The temporary trees are the exception (:data:`TEMPORARY` and
  ``$TMPDIR``: ``/tmp``, ``/var/tmp``, ``/dev/shm``): a cluster's spool, a scratch folder.
- **A folder to write under** (``results``, a cache folder, the GPU lock folder: whoever names it,
  a config file, ``--config``, a flag, the environment) is checked when it is named, before
  anything is written (:func:`check_write_root`): not empty (``results: ""`` would put every output
  at the root of the file system, or in the current folder), and, resolved, not the file system's
  root, a home folder itself (``~``, ``/root``, ``/home``, any user's home), a temporary folder
  itself (shared by every user: a folder inside it is fine), nor in a system tree.
- **A named output file** (``embed --out``, ``new-config --out``): its folder may be a home or a
  temporary folder itself (:func:`check_output_file`), never a system tree.
- An output that already exists as a symbolic link is refused (:func:`check_not_link`): what is
  written, replaced or taken as done is the path the plan names, never what a link points to.

Inputs may live anywhere. No command keeps its own list: every one of them reaches these
functions, and ``tests/workflow/test_safety_rules.py`` runs each rule over every surface.
"""

from __future__ import annotations

import functools
import os
import tempfile
from pathlib import Path
from typing import Any

from clinsent.errors import InputError, shown_value

SYSTEM = (
    "/bin",
    "/boot",
    "/dev",
    "/etc",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/proc",
    "/sbin",
    "/sys",
    "/usr",
    "/var",
)


TEMPORARY = ("/tmp", "/var/tmp", "/dev/shm")  # and $TMPDIR: written in, never written under as themselves


def _homes() -> set[Path]:
    homes = {Path("/home"), Path("/root"), Path.home()}
    try:
        import pwd

        homes |= {Path(p.pw_dir) for p in pwd.getpwall() if p.pw_dir not in ("", "/")}
    except (ImportError, KeyError, OSError):
        pass
    return {Path(os.path.realpath(h)) for h in homes}


@functools.cache
def _resolved(paths: tuple[str, ...]) -> list[Path]:
    return list(dict.fromkeys(Path(os.path.realpath(p)) for p in paths))


def temporary_folders() -> list[Path]:
    """The temporary trees, resolved: :data:`TEMPORARY` and ``$TMPDIR``."""
    tmpdir = os.environ.get("TMPDIR", "").strip()
    return _resolved((*TEMPORARY, *([tmpdir] if tmpdir else [])))


def system_tree(path: Path) -> Path | None:
    """The system folder (:data:`SYSTEM`, resolved) ``path`` (resolved) is or lies under, unless it
    lies inside a temporary tree; None where it may be written."""
    if any(path.is_relative_to(t) and path != t for t in temporary_folders()):
        return None
    return next((s for s in _resolved(SYSTEM) if path == s or path.is_relative_to(s)), None)


def refused_place(target: str | Path) -> str | None:
    """Why a file or folder the tool would write at ``target`` may not be written (a system tree),
    or None: the guard's rule for every output (see the module)."""
    resolved = Path(os.path.realpath(os.path.expanduser(str(target))))
    tree = system_tree(resolved)
    if tree is None:
        return None
    return "is a system folder" if tree == resolved else f"lies in the system folder {tree}"


def forbidden(folder: Path) -> str | None:
    """Why ``folder`` (resolved) may not be written under, or None."""
    if folder == Path(folder.anchor or "/"):
        return "is the root of the file system"
    if folder in temporary_folders():
        return "is a temporary folder itself, shared by every user (a folder inside it is fine)"
    why = refused_place(folder)
    if why is not None:
        return why
    if folder in _homes():
        return "is a home folder itself"
    return None


def inside(path: str | Path, owner: str | Path) -> Path:
    """``path`` when it lies inside ``owner`` (after resolving ``..`` and links), else an error:
    the check before a writer deletes or replaces a folder."""
    resolved, root = Path(path).resolve(), Path(owner).resolve()
    if resolved == root or not resolved.is_relative_to(root) or ".." in Path(path).parts:
        raise InputError(
            path,
            f"is not inside {owner}, the folder this step writes",
            "refusing to delete or replace "
            "it; check the entry names of the config (a name is letters, digits, _, - and .)",
        )
    return Path(path)


def check_write_root(value: object, where: str, what: str = "folder") -> Path:
    """``value`` (a folder the tool writes under, from config key or flag ``where``) as a path, or
    one line naming ``where`` and the fix."""
    text = "" if value is None else str(value)
    if not text.strip():
        raise InputError(
            where,
            'is empty (""): every output would land at the root of the file system or in the current folder',
            f"give a {what} to write under, e.g. results",
        )
    if text != text.strip():
        raise InputError(where, f"{shown_value(text)} starts or ends with a space", "remove the spaces")
    resolved = Path(os.path.realpath(os.path.expanduser(text)))
    why = forbidden(resolved)
    if why is not None:
        shown = f"{text} (resolved: {resolved})" if str(resolved) != text else text
        example = Path.home() / ("clinsent-results" if what == "folder" else "clinsent-cache")
        raise InputError(
            where,
            f"{shown} {why}: the tool writes and replaces files under it",
            f"give a {what} of its own, e.g. {example}",
        )
    return Path(text)


def check_not_link(path: str | Path, where: str) -> None:
    """An output that is a symbolic link (to an input, to another run's file) is refused: it would
    be taken as done, or written through."""
    if os.path.islink(path):
        raise InputError(
            where,
            f"is a symbolic link (to {os.readlink(path)}): an output is written in place, never through a link",
            f"remove the link ({path}); the step then writes the file itself",
        )


def check_output_file(path: str | Path, where: str) -> Path:
    """A file the user named as an output (the embed command's ``--out``, ``new-config --out``): a
    name, whose folder (resolved) is not the root of the file system nor in a system tree (a home
    or a temporary folder itself is fine for one named file)."""
    text = str(path)
    if not text.strip() or Path(text).name in ("", ".", ".."):
        raise InputError(where, "names no file", "give the file to write, e.g. vectors.parquet")
    folder = Path(os.path.realpath(os.path.expanduser(text))).parent
    why = "is the root of the file system" if folder == Path(folder.anchor or "/") else refused_place(folder)
    if why is not None:
        raise InputError(where, f"its folder {folder} {why}", "write the output into a folder of your own")
    return Path(text)


def check_writable(
    folder: str | Path,
    where: str = "config: results",
    probe: Any = tempfile.NamedTemporaryFile,
    fix: str = "set results to a folder you can write, or make this one writable; nothing was run",
) -> None:
    """Stop (the dry run, a command) unless ``folder`` can be written: a temporary file is created
    and removed in it, or, while it does not exist yet, in its nearest existing parent. The probe
    writes rather than reading permission bits, which root ignores."""

    target = Path(folder).absolute()
    while not target.exists() and target != target.parent:
        target = target.parent
    if not target.is_dir():
        raise InputError(where, f"{target} is a file, so {folder} cannot be a folder", fix)
    try:
        with probe(dir=target, prefix=".clinsent-write-probe-"):
            pass
    except OSError as exc:
        reason = os.strerror(exc.errno) if exc.errno else type(exc).__name__
        raise InputError(where, f"{folder} cannot be written ({reason}, in {target})", fix) from None
