"""GPUs per job on one machine: a pool of device slots, each held under a lock file.

Snakemake does not hand out devices to local jobs (``--resources gpu=N`` is a counter only;
snakemake/snakemake#281), so without this every concurrent job would run on device 0. Here:

- **The pool** is the run's (:mod:`clinsent.gpu.pool`, resolved while the Snakefile is parsed and
  handed to every job in the environment).
- **Slots per job** (:func:`take_slot`, the first thing a model job's script does, before
  torch is imported): a job whose rule declares ``gpu=N`` (a training job over N processes,
  ``training.processes``; every other model job 1) takes N free devices of the pool, all or none,
  each under an exclusive ``fcntl.flock`` on ``<lock dir>/gpu-<device>.lock``, and sets
  ``CUDA_VISIBLE_DEVICES`` to them, so ``cuda:0`` .. ``cuda:N-1`` in the job are those devices
  (two jobs of two devices each never hold one each and wait for the other). The lock is the open
  file: the kernel releases it when the process ends, however it ends (``kill -9`` included),
  so a killed job's slot is free again at once; there are no PID files to clean up. The lock
  folder is one per machine (:data:`LOCK_DIR_ENV`, default ``/tmp/clinsent-gpu-locks``), not the
  results folder, so two workflows on one machine share the pool. When every slot is taken the
  job waits for one (more ``--resources gpu`` than devices), saying so in its log.
- **A scheduler's choice is kept**: a job that starts with ``CUDA_VISIBLE_DEVICES`` naming as many
  devices as it asks for (Slurm's ``--gpus=N``) keeps them whole and takes no lock; one naming more,
  outside the workflow, makes those the pool.
- A job whose rule declares no ``gpu`` (``embed_device: cpu``), or runs with ``gpus: []``, sees no
  device (``CUDA_VISIBLE_DEVICES=""``), so it cannot crowd a device it is not counted on.

Every model job logs ``gpu slot: <device>`` or ``gpu slot: none (<why>)``; the slot is also in
:data:`SLOT_ENV` for the run's record (:mod:`clinsent.gpu.hardware`).
"""

from __future__ import annotations

import atexit
import errno
import fcntl
import os
import sys
import time
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from clinsent.errors import InputError
from clinsent.gpu.pool import EXPLICIT_ENV, VISIBLE, exported_pool, visible_entries

SLOT_ENV = "CLINSENT_GPU_SLOT"  # what the job got: a device, or "none (<why>)"
LOCK_DIR_ENV = "CLINSENT_GPU_LOCK_DIR"
DEFAULT_LOCK_DIR = "/tmp/clinsent-gpu-locks"


def lock_dir(environ: Mapping[str, str] = os.environ) -> Path:
    return Path(environ.get(LOCK_DIR_ENV) or DEFAULT_LOCK_DIR)


@dataclass
class Slot:
    """The devices a job got (``device``: one, or several comma-separated as ``CUDA_VISIBLE_DEVICES``
    takes them; None: none, ``why`` says why); ``handles`` hold their locks."""

    device: str | None
    why: str = ""
    handles: list[IO[bytes]] = field(default_factory=list)

    @property
    def devices(self) -> list[str]:
        return self.device.split(",") if self.device else []

    def describe(self) -> str:
        return (
            f"{self.device}{f' ({self.why})' if self.why else ''}" if self.device is not None else f"none ({self.why})"
        )

    def release(self) -> None:
        """Free the slot now (the end of the process frees it in any case)."""
        for handle in self.handles:
            handle.close()  # closing the only descriptor drops the flock
        self.handles = []


def _open_lock(folder: Path, device: str) -> IO[bytes]:
    try:
        make_lock_dir(folder)
        fd = os.open(folder / f"gpu-{device}.lock", os.O_RDONLY | os.O_CREAT, 0o666)
    except OSError as exc:
        raise InputError(
            folder,
            f"cannot create a GPU lock file here ({exc.strerror})",
            f"set {LOCK_DIR_ENV} to a folder every user of this machine can write",
        ) from None
    return os.fdopen(fd, "rb")


def make_lock_dir(folder: Path) -> bool:
    """Create the lock folder where it is missing, shared by every user of the machine (mode
    1777, sticky, as ``/tmp``), and say whether this call created it. An existing folder is used
    as it is: its mode is never changed (``CLINSENT_GPU_LOCK_DIR`` pointed at a folder of note
    text must not open it to everyone; :func:`check_lock_dir` refuses that at dry run)."""
    if folder.is_dir():
        return False
    folder.parent.mkdir(parents=True, exist_ok=True)
    try:
        folder.mkdir()
    except FileExistsError:  # another job made it a moment ago
        return False
    os.chmod(folder, 0o1777)
    return True


def check_lock_dir(results: str | Path, environ: Mapping[str, str] = os.environ) -> None:
    """At dry run: the GPU lock folder is a folder the tool may write under
    (:func:`clinsent.safety.places.check_write_root`), not inside the results folder once links
    are resolved (the tool sets modes there; a lock folder inside would be a folder others write
    in among note text) and can be written (or created), so a job never fails on it."""
    from clinsent.safety.places import check_writable, check_write_root

    folder = lock_dir(environ)
    where = f"environment: {LOCK_DIR_ENV}" if environ.get(LOCK_DIR_ENV) else f"the GPU lock folder {folder}"
    check_write_root(str(folder), where)
    root = Path(os.path.realpath(results))  # links resolved: a link into results is inside it
    if Path(os.path.realpath(folder)).is_relative_to(root):
        raise InputError(
            where,
            f"{folder} is inside the results folder {results}",
            f"set {LOCK_DIR_ENV} to a folder outside every results folder (default {DEFAULT_LOCK_DIR}), "
            "shared by every user of the machine",
        )
    if folder.exists() and not folder.is_dir():
        raise InputError(where, f"{folder} is a file", f"set {LOCK_DIR_ENV} to a folder")
    try:
        check_writable(folder, where)
    except InputError:
        raise InputError(
            where,
            f"{folder} cannot be written (a GPU job would fail on its lock file)",
            f"set {LOCK_DIR_ENV} to a folder every user of this machine can write (default {DEFAULT_LOCK_DIR})",
        ) from None


def try_lock(folder: Path, device: str) -> IO[bytes] | None:
    """The open, exclusively locked lock file of ``device``, or None when another process holds it."""
    handle = _open_lock(folder, device)
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        handle.close()
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            return None
        raise
    return handle


def acquire(
    pool: Sequence[str],
    folder: Path,
    log: Callable[[str], Any] = print,
    poll: float = 0.5,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], Any] = time.sleep,
    count: int = 1,
) -> Slot:
    """Lock the first ``count`` free devices of ``pool``, all or none (those locked are let go
    again while the rest are taken); wait (polling) until that many are free at once."""
    if count > len(pool):
        raise InputError(
            "training.processes",
            f"a job asks for {count} devices and the pool has {len(pool)} ({','.join(pool)})",
            f"set training.processes to at most {len(pool)}, or give the run more devices (gpus:)",
        )
    started, told = clock(), 0.0
    while True:
        handles, taken = [], []
        for device in pool:
            handle = try_lock(folder, device)
            if handle is not None:
                handles.append(handle)
                taken.append(device)
                if len(taken) == count:
                    return Slot(",".join(taken), handles=handles)
        for handle in handles:  # not enough at once: none held while waiting
            handle.close()
        waited = clock() - started
        if waited >= told:
            log(
                f"gpu slot: waiting for {count} free device{'s' if count > 1 else ''} of the pool {','.join(pool)}, "
                f"taken by other jobs (locks in {folder}); --resources gpu larger than the pool makes jobs wait here"
            )
            told = waited + 60.0
        sleep(poll)


def take_slot(
    declares_gpu: int,
    environ: MutableMapping[str, str] = os.environ,
    log: Callable[[str], Any] = print,
    poll: float = 0.5,
) -> Slot:
    """Choose this job's devices before torch is imported, set ``CUDA_VISIBLE_DEVICES`` and log them.

    ``declares_gpu``: how many devices the job's rule counts it against (``resources.gpu``; 0 or
    False: none, True: one)."""
    count = int(declares_gpu)
    if "torch" in sys.modules and _cuda_started():
        raise RuntimeError("take_slot() must run before CUDA starts (before the job's first use of torch.cuda)")
    visible = visible_entries(environ.get(VISIBLE))
    pool = exported_pool(environ)
    if not declares_gpu:
        slot = Slot(None, "the rule declares no gpu: the job runs on the CPU")
        environ[VISIBLE] = ""
    elif visible is not None and (len(visible) == count or (count > len(visible) and pool is None and visible)):
        chosen = ",".join(visible)  # a scheduler's devices, kept whole (fewer than asked: the job says so)
        slot = Slot(chosen, f"chosen by the scheduler: {VISIBLE}={chosen}")
    elif pool is None and visible:  # not started by the workflow, more devices given: they are the pool
        slot = acquire(visible, lock_dir(environ), log, poll, count=count)
        environ[VISIBLE] = slot.device or ""
    elif pool is None:
        slot = Slot(None, "no pool: the job was not started by the workflow")
    elif not pool and environ.get(EXPLICIT_ENV) == "1":
        slot = Slot(None, "gpus: [] in the config")
        environ[VISIBLE] = ""
    elif not pool:
        slot = Slot(None, "no GPU was found when the workflow was planned")
    else:
        slot = acquire(pool, lock_dir(environ), log, poll, count=count)
        environ[VISIBLE] = slot.device or ""
    environ[SLOT_ENV] = slot.describe()
    log(f"gpu slot{'s' if len(slot.devices) > 1 else ''}: {slot.describe()}")
    if slot.handles:
        atexit.register(_free, slot, log)
    return slot


def _free(slot: Slot, log: Callable[[str], Any]) -> None:
    """At the job's end: say so, then release the lock (so the line comes before the next
    holder's; a killed job's lock goes with its process)."""
    log(f"gpu slot {slot.device} freed")
    slot.release()


def _cuda_started() -> bool:
    torch = sys.modules["torch"]
    return bool(getattr(getattr(torch, "cuda", None), "is_initialized", lambda: False)())


def slot_of(smk: Any, log: Callable[[str], Any]) -> Slot:
    """A Snakemake job's slot: the rule's ``gpu`` resource says how many devices it uses (a job
    across nodes declares ``gres: gpu:N`` instead, per node)."""
    return take_slot(gpus_declared(getattr(smk, "resources", None)), log=log)


def gpus_declared(resources: Any) -> int:
    """The devices a job's resources ask for on its node: ``gpu``, or the count of ``gres: gpu:N``."""
    gpu = int(getattr(resources, "gpu", 0) or 0)
    gres = str(getattr(resources, "gres", "") or "")
    if not gpu and gres.startswith("gpu:") and gres.rsplit(":", 1)[-1].isdigit():
        return int(gres.rsplit(":", 1)[-1])
    return gpu
