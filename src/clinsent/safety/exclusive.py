"""One writer per output, one run per results folder, one builder per cache entry.

:func:`writing_lock` holds an exclusive lock on an output for the whole write: a lock file
beside it (``.<name>.lock``) under ``fcntl.flock``, which the kernel drops when the process ends,
however it ends, so a killed writer leaves no stale lock. A second writer of the same output
(another process, on this machine or, on NFS v4 and Lustre, another node) is refused at once
with one line naming the output and the process that holds it; nothing of the first writer's
work is touched. The lock is re-entrant within a process (a writer that stages chunks, then
joins them into the output, holds it once). On a file system that keeps no file locks (Lustre
mounted ``noflock``) the write goes on and one warning per folder says it is unguarded.

:func:`building_lock` is the cache's kind: the builders of one cache entry (shards of one run
exporting one model to ONNX) wait for the first, then find the entry made and reuse it.

:func:`hold_results` is a run's: the lock of its results folder, held by Snakemake's main
process from the moment it starts executing until it ends, so a second run on the same folder is
refused at its start whatever starts it; each job then holds its own outputs' locks
(:func:`clinsent.runner.smk.hold_outputs`), so even a job started outside the run cannot write
over a running job's outputs or logs.

A lock file is made only for a target the guarded writer lets this process write
(:func:`clinsent.safety.guard.claim`: the lock beside it is the target's own), is owner-only, names
its holder (process id, host, time) and is removed by the holder when it lets go (a file
recreated in the meantime is noticed and locked afresh).
"""

from __future__ import annotations

import atexit
import errno
import fcntl
import logging
import os
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

from clinsent.errors import InputError
from clinsent.safety.guard import claim

_HELD: dict[Path, tuple[int, int]] = {}  # lock file -> (descriptor, depth): this process's locks
# flock's errors on a file system that keeps no such locks (Lustre mounted noflock, some FUSE)
NO_LOCKS = {errno.ENOLCK, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EINVAL}
_WARNED: set[Path] = set()


def _no_locks(folder: Path) -> None:
    """Say once per folder that its file system keeps no file locks (a second writer of an output
    there cannot be refused); the write goes on."""
    if folder not in _WARNED:
        _WARNED.add(folder)
        logging.getLogger(__name__).warning(
            "%s: this file system keeps no file locks (flock), so a second writer of the same output here "
            "cannot be refused: run one writer per output (mount with -o flock where it is Lustre)",
            folder,
        )


def lock_path(target: str | Path) -> Path:
    """The lock file of an output or cache entry: beside it, hidden."""
    target = Path(target)
    return Path(os.path.abspath(target.parent)).resolve() / f".{target.name}.lock"


def _holder(path: Path) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return "another process"
    return text if text.startswith("pid ") and len(text) < 600 else "another process"


def _open_locked(target: str | Path, path: Path, blocking: bool, waiting: Callable[[str], None] | None) -> int | None:
    """A descriptor of ``target``'s lock file ``path`` holding its flock, its holder written (None:
    held elsewhere and not ``blocking``)."""
    claim(target)
    fd = _flock_current(path, blocking, waiting)
    if fd is not None:
        _name_holder(fd, f"pid {os.getpid()} on {socket.gethostname()} since {time.strftime('%H:%M:%S')}")
    return fd


def _flock_current(path: Path, blocking: bool, waiting: Callable[[str], None] | None = None) -> int | None:
    """A descriptor of the lock file at ``path`` now, holding its flock (None: held elsewhere and
    not ``blocking``). A holder removes its lock file as it lets go, so a file opened here may be
    unlinked before its flock is taken: after taking it, the path must still name the file this
    descriptor has (device and inode), or the one there now is locked instead. Without the check a
    process paused between ``open`` and ``flock`` would hold a removed file's lock beside a newcomer
    holding the new file's."""
    while True:
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        except IsADirectoryError:
            raise InputError(
                path,
                "is a folder where the tool's lock file goes",
                "remove that folder (the tool makes the lock file itself); nothing was written",
            ) from None
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if not blocking:
                    os.close(fd)
                    return None
                if waiting is not None:
                    waiting(_holder(path))
                fcntl.flock(fd, fcntl.LOCK_EX)
            except OSError as exc:
                if exc.errno not in NO_LOCKS:
                    raise
                _no_locks(path.parent)  # a file system without flock: the write goes on, unguarded
                return fd
            if _names(path, fd):
                return fd
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)  # the holder removed it as we waited: lock the file that is there now


def _names(path: Path, fd: int) -> bool:
    """Whether ``path`` names the file open as ``fd`` (device and inode)."""
    try:
        here, there = os.fstat(fd), os.stat(path)
    except FileNotFoundError:
        return False
    return (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino)


def _name_holder(fd: int, text: str) -> None:
    """Write who holds a lock into its file (the refusal of a second writer names it)."""
    os.ftruncate(fd, 0)
    os.write(fd, text.encode())


@contextmanager
def _locked(target: str | Path, blocking: bool, waiting: Callable[[str], None] | None = None) -> Iterator[None]:
    path = lock_path(target)
    if path in _HELD:
        fd, depth = _HELD[path]
        _HELD[path] = (fd, depth + 1)
        try:
            yield
        finally:
            fd, depth = _HELD[path]
            _HELD[path] = (fd, depth - 1)
        return
    opened = _open_locked(target, path, blocking, waiting)
    if opened is None:
        raise InputError(
            target,
            f"is being written by {_holder(path)}, which holds its lock ({path.name})",
            "wait for that run to finish, or write another output; nothing was written",
        )
    fd = opened
    _HELD[path] = (fd, 1)
    try:
        yield
    finally:
        if _HELD[path][1] == 1:
            del _HELD[path]
            try:
                path.unlink(missing_ok=True)  # while still held: a waiter then locks a new file
            finally:
                os.close(fd)
        else:
            _HELD[path] = (fd, _HELD[path][1] - 1)


def writing_lock(output: str | Path) -> AbstractContextManager[None]:
    """The one writer of ``output`` for the block; a second is refused at once (see the module)."""
    return _locked(output, blocking=False)


def building_lock(entry: str | Path, waiting: Callable[[str], None] | None = None) -> AbstractContextManager[None]:
    """The one builder of a cache ``entry`` for the block; the others wait (``waiting`` is told
    who holds it), then find the entry made."""
    return _locked(entry, blocking=True, waiting=waiting)


def held() -> list[Path]:
    """The lock files this process holds (tests)."""
    return sorted(_HELD)


RUN_LOCK = ".clinsent-run.lock"  # the results folder's one-run lock, in the results folder
_RUN: dict[Path, int] = {}  # results lock file -> descriptor: held by this process until it ends


def hold_results(results: str | Path, log: Callable[[str], Any] = print) -> None:
    """This run's lock of its results folder, held until the process ends: a second run on the same
    folder (another checkout, another working folder, a cluster run beside a local one) is refused
    at its start, naming the holder's process, host and working folder; the first run's files are
    untouched. Taken by Snakemake's main process alone, when it starts executing (the workflow's
    ``onstart``): a dry run, ``--unlock``, ``--summary``, ``--report`` and the plan command take
    none, and ``--nolock`` (Snakemake's own lock, per working folder) does not lift it. A lock left
    by a run that is gone (the kernel drops a dead process's lock) is taken over, with one line."""
    path = Path(results) / RUN_LOCK
    if path in _RUN:
        return
    claim(path)
    fd = _flock_current(path, blocking=False)  # the file there now, re-checked after its flock
    if fd is None:
        raise InputError(
            f"config: results: {results}",
            f"is being written by another run: {_holder(path)}",
            f"wait for that run to end, or give this run another results folder; a lock is let go when its run "
            f"ends, however it ends (remove {path} by hand only if no run on any machine uses the folder)",
        )
    left = _holder(path)
    if left.startswith("pid "):
        log(f"took over the results lock left by a run that is gone ({left})")
    since = time.strftime("%Y-%m-%d %H:%M:%S")
    _name_holder(fd, f"pid {os.getpid()} on {socket.gethostname()} in {os.getcwd()} since {since}")
    _RUN[path] = fd
    atexit.register(_let_go, path)  # a run that ends leaves no lock file; one killed leaves one, taken over


def _let_go(path: Path) -> None:
    """The results lock's file removed while still held, then the lock let go (the process ends)."""
    fd = _RUN.pop(path, None)
    if fd is not None:
        try:
            path.unlink(missing_ok=True)
        finally:
            os.close(fd)
