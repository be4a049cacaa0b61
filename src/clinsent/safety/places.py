"""Where the tool may write: every folder it writes under (``results``, an embed ``--out``'s
folder, a cache folder, the GPU lock folder) is checked here, whoever names it (a config file,
``--config``, a flag, the environment), before anything is written.

- It is not empty: ``results: ""`` is refused as ``--config results=`` is (an empty path would
  put every output at the root of the file system, or in the current folder, depending on the
  code that joins it).
- Resolved (links followed, ``..`` taken), it is not the file system's root, a home folder itself
  (``~``, ``/root``, ``/home``, any user's home), or a system folder (:data:`SYSTEM`).
- An output that already exists as a symbolic link is refused (:func:`check_not_link`): what is
  written, replaced or taken as done is the path the plan names, never what a link points to.

Inputs may live anywhere.
"""

from __future__ import annotations

import os
from pathlib import Path

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


def _homes() -> set[Path]:
    homes = {Path("/home"), Path("/root"), Path.home()}
    try:
        import pwd

        homes |= {Path(p.pw_dir) for p in pwd.getpwall() if p.pw_dir not in ("", "/")}
    except (ImportError, KeyError, OSError):
        pass
    return {Path(os.path.realpath(h)) for h in homes}


def forbidden(folder: Path) -> str | None:
    """Why ``folder`` (resolved) may not be written under, or None."""
    if folder == Path(folder.anchor or "/"):
        return "is the root of the file system"
    if str(folder) in SYSTEM or any(Path(os.path.realpath(s)) == folder for s in SYSTEM):
        return "is a system folder"
    if folder in _homes():
        return "is a home folder itself"
    return None


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
        raise InputError(
            where,
            f"{shown} {why}: the tool writes and replaces files under it",
            f"give a {what} of its own, e.g. {Path.home() / 'clinsent-results' if what == 'folder' else 'a folder'}",
        )
    return Path(text)


def check_not_link(path: str | Path, where: str) -> None:
    """An output that is a symbolic link (to an input, to another run's file) is refused: it would
    be taken as done, or written through."""
    if os.path.islink(path):
        raise InputError(
            where,
            f"{path} is a symbolic link (to {os.readlink(path)}): an output is written in place, never through a link",
            f"remove the link ({path}); the step then writes the file itself",
        )


def check_output_file(path: str | Path, where: str) -> Path:
    """A file the user named as an output (the embed command's ``--out``): a name, whose folder
    (resolved) is not the root of the file system or a system folder (a home folder is fine for
    one named file)."""
    text = str(path)
    if not text.strip() or Path(text).name in ("", ".", ".."):
        raise InputError(where, "names no file", "give the file to write, e.g. vectors.parquet")
    folder = Path(os.path.realpath(os.path.expanduser(text))).parent
    why = forbidden(folder)
    if why is not None and why != "is a home folder itself":
        raise InputError(where, f"its folder {folder} {why}", "write the output into a folder of your own")
    return Path(text)
