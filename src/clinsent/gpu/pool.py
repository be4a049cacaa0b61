"""The GPU pool of a run on one machine (:func:`resolve_pool`, while the Snakefile is parsed,
without importing torch): the devices the jobs share, one per job (:mod:`clinsent.gpu.slots`).

The config's ``gpus`` (device indices among the visible devices; ``[]``: use no GPU), or by
default every visible device: the entries of ``CUDA_VISIBLE_DEVICES`` when it is set, else one
index per device the NVIDIA driver lists (``/proc/driver/nvidia/gpus``, else ``nvidia-smi -L``).
``snakemake --config gpus=[2,3]`` overrides it for one run. The Snakefile hands the pool to every
job in the environment (:data:`POOL_ENV`, :func:`export_pool`): it changes no output, so it is no
job's param.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterable, Mapping, MutableMapping
from pathlib import Path
from typing import Any

from clinsent.errors import InputError

POOL_ENV = "CLINSENT_GPU_POOL"  # the pool the Snakefile resolved, comma-separated ("" = none)
EXPLICIT_ENV = "CLINSENT_GPU_POOL_FROM_CONFIG"  # "1": the config's gpus made the pool (so [] means none)
VISIBLE = "CUDA_VISIBLE_DEVICES"
_DEVICE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_:-]*$")  # an index, GPU-<uuid> or MIG-<uuid>


def visible_entries(value: str | None) -> list[str] | None:
    """The devices a ``CUDA_VISIBLE_DEVICES`` value names (None: unset). CUDA stops at the first
    invalid entry (``-1`` hides every device), and so does this."""
    if value is None:
        return None
    out: list[str] = []
    for part in (p.strip() for p in value.split(",")):
        if not part or part.startswith("-") or not _DEVICE.match(part):
            break
        out.append(part)
    return out


def detect_devices(proc: str | Path = "/proc/driver/nvidia/gpus", run: Callable[..., Any] = subprocess.run) -> int:
    """How many GPUs the NVIDIA driver lists, without CUDA or torch (0 when there is no driver)."""
    folder = Path(proc)
    if folder.is_dir():
        return sum(1 for p in folder.iterdir() if p.is_dir())
    try:
        out = run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return 0
    return sum(1 for line in str(out.stdout).splitlines() if line.startswith("GPU "))


def resolve_pool(
    gpus: Any,
    environ: Mapping[str, str] = os.environ,
    detect: Callable[[], int] = detect_devices,
    warn: Callable[[str], Any] = lambda line: print(line, file=sys.stderr),
) -> list[str]:
    """The devices of the pool (what ``CUDA_VISIBLE_DEVICES`` will be set to, one per job) from
    the config's ``gpus`` (None or "auto": every visible device; a list of indices among the
    visible devices; a comma-separated string of them; ``[]``: none). A device named twice in
    ``CUDA_VISIBLE_DEVICES`` is refused as in ``gpus``; indices on a machine that shows no GPU
    (a login node planning for GPU nodes) get one ``warn`` line, since they cannot be checked."""
    visible = visible_entries(environ.get(VISIBLE))
    if visible is not None and (twice := [d for i, d in enumerate(visible) if d in visible[:i]]):
        raise InputError(
            f"environment: {VISIBLE}",
            f"device {twice[0]} is listed twice, which would make two slots of one device",
            f"list each device once in {VISIBLE}, or unset it",
        )
    if gpus is None or gpus == "auto":
        return visible if visible is not None else [str(i) for i in range(detect())]
    items = _indices(gpus)
    if visible is None:  # the driver's own numbering; a CPU machine may list slots it does not have
        found = detect()
        if found and (bad := [i for i in items if i >= found]):
            raise InputError(
                "config: gpus",
                f"device {bad[0]} is not among the {found} GPUs the driver lists (0-{found - 1})",
                "list indices of this machine's GPUs, or leave gpus out for all",
            )
        if not found and items:
            warn(
                f"config: gpus: this machine shows no GPU, so device(s) {', '.join(map(str, items))} cannot be "
                "checked here; the jobs take them where they run (a plan made on a login node for GPU nodes is fine; "
                "elsewhere, list the indices nvidia-smi -L shows there, or set gpus: [] for none)"
            )
        return [str(i) for i in items]
    if bad := [i for i in items if i >= len(visible)]:
        raise InputError(
            "config: gpus",
            f"index {bad[0]} is beyond the {len(visible)} device(s) "
            f"CUDA_VISIBLE_DEVICES makes visible ({','.join(visible)})",
            "give indices among the visible devices (0 is the first), or leave gpus out for all",
        )
    return [visible[i] for i in items]


def _indices(gpus: Any) -> list[int]:
    if isinstance(gpus, str):
        gpus = [p.strip() for p in gpus.split(",") if p.strip()]
    if isinstance(gpus, int) and not isinstance(gpus, bool):
        gpus = [gpus]
    if not isinstance(gpus, (list, tuple)):
        raise InputError(
            "config: gpus",
            f"a value of type {type(gpus).__name__}",
            "give a list of device indices ([0, 1]), [] for none, or leave it out for every visible GPU",
        )
    out: list[int] = []
    for i, g in enumerate(gpus):
        try:
            value = int(g)
        except (TypeError, ValueError):
            value = -1
        if isinstance(g, bool) or value < 0 or (isinstance(g, str) and not g.strip().isdigit()):
            raise InputError(
                f"config: gpus[{i}]",
                "is not a device index (0, 1, ...)",
                "list device indices among the visible devices, e.g. gpus: [0, 1]",
            )
        if value in out:
            raise InputError(f"config: gpus[{i}]", f"device {value} is listed twice", "list each device once")
        out.append(value)
    return out


def exported_pool(environ: Mapping[str, str]) -> list[str] | None:
    """The pool the Snakefile handed to this job (None: the job was not started by the workflow)."""
    value = environ.get(POOL_ENV)
    return None if value is None else [p for p in value.split(",") if p]


def export_pool(pool: Iterable[str], explicit: bool, environ: MutableMapping[str, str] = os.environ) -> None:
    """Hand the pool to every job (the Snakefile, once parsed); ``explicit``: the config set ``gpus``."""
    environ[POOL_ENV] = ",".join(pool)
    environ[EXPLICIT_ENV] = "1" if explicit else "0"
