"""Cache folders: where a derived artefact is kept (the ONNX export of a model, its int8 graph).

A cache is kept only where the tool may write: inside the results folder for workflow jobs
(``<results>/cache``), and for the embed command in the folder ``--cache`` names, by default
``.clinsent-cache`` beside the output it was asked to write. Never beside a model the tool did
not make (an installed package, a shared or read-only folder). Weights carry their training
data's terms, so a cache of them is owner-only: the folder is created 0700, and an existing one
that others can reach (:func:`clinsent.safety.reach.others_can_reach`) is refused, or, inside
the tool's own results folder, made owner-only. Its entries are keyed by the content they
derive from (:mod:`clinsent.safety.content`); builders of one entry take turns
(:func:`clinsent.safety.exclusive.building_lock`).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from clinsent.errors import InputError
from clinsent.safety.guard import claim
from clinsent.safety.places import check_writable, check_write_root
from clinsent.safety.reach import others_can_reach

DEFAULT = ".clinsent-cache"


def default_cache(out: str | Path) -> Path:
    """The embed command's cache when ``--cache`` is not given: beside its output."""
    return Path(os.path.abspath(out)).parent / DEFAULT


def cache_folder(folder: str | Path, where: str, owned: bool = False) -> Path:
    """``folder`` made ready as a cache (see the module); ``owned``: it lies in the tool's own
    results folder, whose modes the tool sets. Returns it."""
    folder = claim(check_write_root(folder, where, "cache folder"))
    fix = "name a folder you can write for the cache (--cache DIR)" if where == "--cache" else "make it writable"
    check_writable(folder, where, fix=fix)  # a file on its path, a read-only or foreign folder: one line
    if not folder.exists():
        missing = [folder, *(p for p in folder.parents if not p.exists())]
        try:
            for made in reversed(missing):
                made.mkdir(mode=0o700, exist_ok=True)
                os.chmod(made, 0o700)  # mkdir's mode passes through the umask
        except OSError as exc:
            raise InputError(where, f"the cache folder {folder} cannot be made ({exc.strerror})", fix) from None
        return folder
    if not folder.is_dir():
        raise InputError(where, f"{folder} is a file", "name a folder for the cache")
    if others_can_reach(folder):
        if owned:
            os.chmod(folder, 0o700)
            return folder
        raise InputError(
            where,
            f"others can reach the cache folder {folder} (mode {stat.S_IMODE(folder.stat().st_mode):04o}): it holds "
            "copies of model weights, which carry their training data's terms",
            f"make it owner-only (chmod 700 {folder}), or name another folder with --cache",
        )
    return folder
