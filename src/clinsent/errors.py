"""The one exception type for bad input: it names the file, the row or key, and the fix."""

from __future__ import annotations

import errno
from pathlib import Path


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
