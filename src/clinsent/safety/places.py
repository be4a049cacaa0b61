"""Where the tool may write, one rule for every command and every output.

- **No file in a system tree, decided by what a folder is.** Every file the tool writes passes
  the guard (:func:`clinsent.safety.guard.claim` calls :func:`refused_place`): neither it nor any
  folder above it is, by device and inode (:func:`identity`), a system folder (:data:`SYSTEM`:
  ``/etc``, ``/usr``, ``/var``, ``/run``, ``/dev``, ...), so ``/var/run`` (which is ``/run``), a
  link and a bind mount of ``/etc`` are each the folder they show. Nor does it lie in the tool's
  own source tree. The temporary trees are the exception below themselves (:data:`TEMPORARY`,
  ``/tmp``, ``/var/tmp``, ``/dev/shm``, by identity, and ``$TMPDIR`` where it is neither a system
  folder nor above one: ``TMPDIR=/etc`` or ``/`` exempts nothing; a cluster's per-job spool
  folder does).
- **A folder to write under** (``results``, a cache folder, the GPU lock folder: whoever names it,
  a config file, ``--config``, a flag, the environment) is checked when it is named, before
  anything is written (:func:`check_write_root`): not empty (``results: ""`` would put every output
  at the root of the file system, or in the current folder), and, resolved, not the file system's
  root, a home folder itself (``~``, ``/root``, ``/home``, any user's home), a temporary folder
  itself (shared by every user: a folder inside it is fine), the tool's own checkout (``results:
  .`` run from it) nor in a system tree or the package's sources (``results: src/clinsent``).
- **A named output file** (``embed --out``, ``new-config --out``): its folder may be a home or a
  temporary folder itself (:func:`check_output_file`), never a system tree.
- An output that already exists as a symbolic link is refused (:func:`check_not_link`): what is
  written, replaced or taken as done is the path the plan names, never what a link points to.

Inputs may live anywhere. No command keeps its own list: every one of them reaches these
functions, and ``tests/workflow/test_safety_rules.py`` runs each rule over every surface.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from clinsent.errors import InputError, shown_value
from clinsent.repository import ROOT

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
    "/run",
    "/sbin",
    "/sys",
    "/usr",
    "/var",
)


TEMPORARY = ("/tmp", "/var/tmp", "/dev/shm")  # and $TMPDIR: written in, never written under as themselves

Identity = tuple[int, int]  # (device, inode): what a folder is, however it is spelled or reached


def identity(path: str | Path) -> Identity | None:
    """What ``path`` is (device and inode, links followed: a link is what it leads to; a bind
    mount is the folder it shows), or None where nothing is there yet."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return (st.st_dev, st.st_ino)


def _chain(path: Path) -> list[tuple[Path, Identity]]:
    """``path`` and each of its parents that exist, nearest first, with what each is."""
    out = []
    for p in (path, *path.parents):
        found = identity(p)
        if found is not None:
            out.append((p, found))
    return out


def _system() -> dict[Identity, str]:
    """The system folders by what they are (``/var/run`` is ``/run``; a link or a bind mount to
    one of them is that one)."""
    return {found: name for name in SYSTEM if (found := identity(name)) is not None}


def _homes() -> set[Path]:
    homes = {Path("/home"), Path("/root"), Path.home()}
    try:
        import pwd

        homes |= {Path(p.pw_dir) for p in pwd.getpwall() if p.pw_dir not in ("", "/")}
    except (ImportError, KeyError, OSError):
        pass
    return {Path(os.path.realpath(h)) for h in homes}


def temporary_folders() -> dict[Identity, Path]:
    """The temporary trees by what they are: :data:`TEMPORARY`, and ``$TMPDIR`` where it is neither
    a system folder nor above one (``TMPDIR=/etc`` or ``/`` exempts nothing; a scheduler's
    per-job folder under a spool is a tree of its own)."""
    found = {i: Path(t) for t in TEMPORARY if (i := identity(t)) is not None}
    tmpdir = os.environ.get("TMPDIR", "").strip()
    own = identity(tmpdir) if tmpdir else None
    if own is not None:
        system = _system()
        above = any(own in {i for _, i in _chain(Path(os.path.realpath(name)))} for name in system.values())
        if own not in system and not above:
            found[own] = Path(tmpdir)
    return found


def _package_trees() -> dict[Identity, str]:
    """The tool's own source tree (the installed package), never an output's home."""
    here = Path(__file__).resolve().parents[1]
    return {found: str(here)} if (found := identity(here)) is not None else {}


def system_tree(path: Path) -> Path | None:
    """The system folder (or the package's own source tree) ``path`` is or lies under, decided by
    what each of its folders is, not how it is spelled; None where it may be written. The nearest
    decides: inside a temporary tree (below it) is writable even where the tree lies under a
    system folder (``/var/tmp``)."""
    temporary, system, package = temporary_folders(), _system(), _package_trees()
    for folder, found in _chain(path):
        if folder != path and found in temporary:
            return None
        if found in system:
            return Path(system[found])
        if found in package:
            return Path(package[found])
    return None


def refused_place(target: str | Path) -> str | None:
    """Why a file or folder the tool would write at ``target`` may not be written (a system tree,
    the package's own source tree), or None: the guard's rule for every output (see the module)."""
    resolved = Path(os.path.realpath(os.path.expanduser(str(target))))
    tree = system_tree(resolved)
    if tree is None:
        return None
    if tree in {Path(p) for p in _package_trees().values()}:
        return f"lies in the tool's own source tree {tree}"
    same = identity(resolved) == identity(tree)
    shown = "" if str(resolved).startswith(str(tree)) else f" ({tree} reached another way)"
    return f"is a system folder{shown}" if same else f"lies in the system folder {tree}{shown}"


def forbidden(folder: Path) -> str | None:
    """Why ``folder`` (resolved) may not be written under, or None."""
    found = identity(folder)
    if folder == Path(folder.anchor or "/") or (found is not None and found == identity("/")):
        return "is the root of the file system"
    if found is not None and found in temporary_folders():
        return "is a temporary folder itself, shared by every user (a folder inside it is fine)"
    why = refused_place(folder)
    if why is not None:
        return why
    if folder in _homes() or (found is not None and found in {identity(h) for h in _homes()}):
        return "is a home folder itself"
    if found is not None and found == identity(ROOT):
        return "is the tool's own checkout (its Snakefile, config and sources)"
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
