"""The one exception type for bad input: it names the file, the row or key, and the fix; and
how an error may show a user's key or value (:func:`shown`, :func:`shown_value`,
:func:`unknown_key`): a key or value that could be a line of a note is named by its length,
never quoted, so no console or log line carries note text."""

from __future__ import annotations

import errno
import re
from pathlib import Path
from typing import Any

KEY = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]{0,79}$")


def shown(key: Any) -> str:
    """A config key as an error message may show it: quoted when it is a plain name, else only
    its length (a key that is a line of a note must not reach a console or a log)."""
    if isinstance(key, (int, float, bool)) or key is None:
        return repr(key)
    text = str(key)
    return repr(text) if KEY.match(text) else f"a key of {len(text)} characters"


def unknown_key(key: Any) -> str:
    """ "unknown key 'name'", or for a key that may not be shown "an unknown key (a key of N characters)"."""
    hidden = isinstance(key, str) and not KEY.match(key)
    return f"an unknown key ({shown(key)})" if hidden else f"unknown key {shown(key)}"


def shown_value(value: Any) -> str:
    """A config value as an error message may show it: numbers and plain names or paths quoted,
    any other text only by its length."""
    if value is None or isinstance(value, (int, float, bool)):
        return repr(value)
    if isinstance(value, str):
        return repr(value) if _PLAIN.match(value) else f"a text of {len(value)} characters"
    return f"a {type(value).__name__} of {len(value)} item(s)" if hasattr(value, "__len__") else "a value"


_PLAIN = re.compile(r"^[A-Za-z0-9_./@:+~-]{0,120}$")


class InputError(ValueError):
    """Raised for bad user input. The message says where (file, row, key) and what to do."""

    def __init__(self, where: str | Path, problem: str, fix: str) -> None:
        self.where = str(where)
        self.problem = problem
        self.fix = fix
        super().__init__(f"{where}: {problem}. Fix: {fix}")


# errno -> what a failed write means, for the errors a full, read-only or failing disk gives
WRITE_ERRORS = {
    errno.ENOSPC: "no space left on the device",
    errno.EDQUOT: "the disk quota is exceeded",
    errno.EFBIG: "the file is larger than the system allows (ulimit -f, or the file system's limit)",
    errno.EROFS: "the file system is read-only",
    errno.EIO: "an I/O error of the disk",
    errno.EACCES: "permission denied",
    errno.EPERM: "permission denied",
}


class OutputError(OSError):
    """A write failed for a reason of the disk (full, quota, read-only, I/O): names the output,
    says nothing was left half-written, and how to go on."""

    def __init__(self, path: str | Path, code: int) -> None:
        folder = Path(path).parent
        fix = (
            "make the folder writable, or set `results` to a folder you can write"
            if code in (errno.EACCES, errno.EPERM, errno.EROFS)
            else f"free space on the file system that holds {folder} (df -h {folder}), or set `results` on a larger "
            "one"
            if code in (errno.ENOSPC, errno.EDQUOT)
            else "check the disk and the limits, then rerun"
        )
        super().__init__(
            f"{path}: could not be written ({WRITE_ERRORS.get(code, 'an I/O error')}); nothing was left "
            f"half-written. Fix: {fix}; a rerun starts the job again (a training job from its last "
            "checkpoint)"
        )
        self.errno = code
        self.path = str(path)
