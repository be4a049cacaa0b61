"""The one exception type for bad input: it names the file, the row or key, and the fix; and
how an error may show a user's key or value (:func:`shown`, :func:`shown_value`,
:func:`unknown_key`): a key or value that could be a line of a note is named by its length,
never quoted, so no console or log line carries note text; a URL never shows its secrets
(:func:`redact_urls`: its user information and query string), in an error or a log line; and the
tool's commands refuse a flag in one line, exit 2 (:class:`CommandParser`)."""

from __future__ import annotations

import argparse
import errno
import re
import sys
from pathlib import Path
from typing import Any, NoReturn

KEY = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]{0,79}$")


def shown(key: Any) -> str:
    """A config key as an error message may show it: quoted when it is a plain name, else only
    its length (a key that is a line of a note must not reach a console or a log)."""
    if isinstance(key, (int, float, bool)) or key is None:
        return repr(key)
    text = str(key)
    return repr(text) if KEY.match(text) else f"a key of {len(text)} characters"


CONFIG_KEY = re.compile(r"^[a-z][a-z0-9_]{0,39}$")  # what every key of the config looks like


def unknown_key(key: Any) -> str:
    """ "unknown key 'name'" where the key looks like a config key (lowercase letters, digits and
    underscores, short), or else "an unknown key (a key of N characters)": a file given as a config
    by mistake (a note whose first line is ``Smith: ...``) must not have its first word echoed."""
    hidden = isinstance(key, str) and not CONFIG_KEY.match(key)
    return f"an unknown key (a key of {len(key)} characters)" if hidden else f"unknown key {shown(key)}"


def shown_value(value: Any) -> str:
    """A config value as an error message may show it: numbers and plain names or paths quoted,
    any other text only by its length."""
    if value is None or isinstance(value, (int, float, bool)):
        return repr(value)
    if isinstance(value, str):
        return repr(value) if _PLAIN.match(value) else f"a text of {len(value)} characters"
    return f"a {type(value).__name__} of {len(value)} item(s)" if hasattr(value, "__len__") else "a value"


_PLAIN = re.compile(r"^[A-Za-z0-9_./@:+~-]{0,120}$")

# a URL: its scheme, its user information (user:token@), the rest up to its query, its query string
_URL = re.compile(r"""\b([A-Za-z][A-Za-z0-9+.-]*://)([^\s/?#@]*@)?([^\s?#)"'<>]*)(\?[^\s#)"'<>]*)?""")


def redact_urls(text: str) -> str:
    """``text`` with every URL's user information and query string replaced by ``***``
    (``https://user:TOKEN@host/f?sig=S`` -> ``https://***@host/f?***``): a signed or authenticated
    URL's secret is never shown, whatever message or log line carries it."""

    def redacted(m: re.Match[str]) -> str:
        scheme, user, rest, query = m.groups()
        return f"{scheme}{'***@' if user else ''}{rest}{'?***' if query else ''}"

    return _URL.sub(redacted, text)


class InputError(ValueError):
    """Raised for bad user input. The message says where (file, row, key) and what to do."""

    def __init__(self, where: str | Path, problem: str, fix: str) -> None:
        self.where = redact_urls(str(where))  # a URL's secrets are never shown (redact_urls)
        self.problem = redact_urls(problem)
        self.fix = redact_urls(fix)
        super().__init__(f"{self.where}: {self.problem}. Fix: {self.fix}")


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


class CommandParser(argparse.ArgumentParser):
    """The argument parser of the tool's commands (``python -m clinsent embed``, ``new-config``): a
    refused flag (unknown, or a number out of its range:
    :func:`clinsent.config.declare.number_flag`) is one line, ``<prog>: <flag>: <why>``, and
    exit status 2, as every other refusal of a command; ``--help`` prints the usage, exit 0."""

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"{self.prog}: {message}. Fix: see {self.prog} --help\n")
        raise SystemExit(2)
