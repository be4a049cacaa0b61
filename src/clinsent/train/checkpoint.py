"""Training checkpoints, so a killed or preempted job resumes where it stopped instead of restarting.

A checkpoint holds every trainable module, the optimiser and scheduler, the random number
generators, the curve so far and the step. Each is ``state-<step>.pt`` with a sidecar
``state-<step>.json`` (its sha256, step and fingerprint), both written atomically (temporary
file, fsync, rename, fsync of the folder); the two newest are kept. On resume the newest whose
bytes match its checksum and whose fingerprint (the settings, the base model and the batch plan)
matches the job's is used; one that does not match its checksum or does not load (a disk that
filled up, a copy cut short) is reported with its path and moved to ``<folder>.corrupt/``, and the
previous one is tried, then step 0. The best model so far lives beside them in ``best/`` with a
``best.json`` that is the authority on its step and score. The whole folder is removed when the
job succeeds.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import random
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

STATE_GLOB = "state-*.pt"
KEEP = 2  # checkpoints kept: the newest and the one before it
BEST = "best"
BEST_META = "best.json"
_STATE = re.compile(r"^state-(\d+)\.pt$")
log = logging.getLogger(__name__)


def fingerprint(settings: dict[str, Any], base_model: str, plan: pd.DataFrame | None) -> str:
    h = hashlib.sha256(json.dumps({"settings": settings, "base_model": base_model}, sort_keys=True).encode())
    if plan is not None:
        h.update(pd.util.hash_pandas_object(plan, index=False).to_numpy().tobytes())
    return h.hexdigest()


def rng_state() -> dict[str, Any]:
    state = {"torch": torch.get_rng_state(), "numpy": np.random.get_state(), "python": random.getstate()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    torch.set_rng_state(state["torch"])
    np.random.set_state(state["numpy"])
    random.setstate(state["python"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_durably(path: Path, write: Callable[[Any], None]) -> None:
    """``write(file object)`` through the one atomic writer (:func:`clinsent.io.files.atomic_path`: a
    temporary file beside ``path``, renamed onto it), fsynced before the rename."""
    from clinsent.io.files import atomic_path

    with atomic_path(path, ".tmp") as tmp, open(tmp, "wb") as fh:
        write(fh)
        fh.flush()
        os.fsync(fh.fileno())


def state_paths(folder: Path) -> list[tuple[int, Path]]:
    """(step, path) of the checkpoints in ``folder``, newest first."""
    found = [(int(m.group(1)), p) for p in folder.glob(STATE_GLOB) if (m := _STATE.match(p.name))]
    return sorted(found, reverse=True)


def state_path(folder: Path, step: int) -> Path:
    """The checkpoint file of ``step`` in ``folder``."""
    return folder / f"state-{int(step):08d}.pt"


def load_step(folder: Path, step: int) -> dict[str, Any]:
    """The checkpoint of ``step``, read as it is (a job's other processes, once process 0 has
    chosen it with :func:`load_state` and checked its bytes)."""
    state: dict[str, Any] = torch.load(state_path(folder, step), map_location="cpu", weights_only=False)
    return state


def save_state(folder: Path, state: dict[str, Any]) -> Path:
    """Write ``state`` (with its ``step`` and ``fingerprint``) as the newest checkpoint; keep :data:`KEEP`."""
    folder.mkdir(parents=True, exist_ok=True)
    step = int(state["step"])
    path = state_path(folder, step)
    digest = hashlib.sha256()

    def dump(fh: Any) -> None:
        failed: list[OSError] = []

        class Hashing:  # torch.save writes through this, so the checksum costs no second read
            def write(self, data: bytes) -> int:
                digest.update(data)
                try:
                    return int(fh.write(data))
                except OSError as exc:  # torch turns it into "unexpected pos": keep the OS's reason
                    failed.append(exc)
                    raise

            def flush(self) -> None:
                fh.flush()

        try:
            torch.save(state, Hashing())  # type: ignore[arg-type]
        except RuntimeError:
            if failed:
                raise failed[0] from None
            raise

    _write_durably(path, dump)
    meta = {"sha256": digest.hexdigest(), "step": step, "fingerprint": state.get("fingerprint"), "file": path.name}
    _write_durably(path.with_suffix(".json"), lambda fh: fh.write(json.dumps(meta).encode()))
    _fsync_dir(folder)
    for _, old in state_paths(folder)[KEEP:]:
        old.unlink(missing_ok=True)
        old.with_suffix(".json").unlink(missing_ok=True)
    return path


def _set_aside(path: Path, why: str, report: Callable[[str], Any]) -> None:
    aside = path.parent.parent / f"{path.parent.name}.corrupt"
    aside.mkdir(parents=True, exist_ok=True)
    for p in (path, path.with_suffix(".json")):
        if p.exists():
            p.replace(aside / p.name)
    report(f"checkpoint {path} is unusable ({why}): moved to {aside}/; trying the previous checkpoint")


def load_state(
    folder: Path, expected_fingerprint: str, report: Callable[[str], Any] = log.warning
) -> dict[str, Any] | None:
    """The newest sound checkpoint when it belongs to this job; None when there is none or the
    newest sound one is of other settings. Unsound ones are reported and set aside."""
    for _, path in state_paths(folder):
        meta_path = path.with_suffix(".json")
        try:
            meta = json.loads(meta_path.read_text())
        except (OSError, ValueError):
            _set_aside(path, "no readable checksum file: the write was interrupted", report)
            continue
        if meta.get("fingerprint") != expected_fingerprint:
            return None
        try:
            from clinsent.safety.content import sha256_file

            if sha256_file(path) != meta.get("sha256"):
                _set_aside(path, "its bytes do not match the checksum written with it", report)
                continue
            state: dict[str, Any] = torch.load(path, map_location="cpu", weights_only=False)
        except Exception as exc:  # noqa: BLE001 - any unreadable file is set aside, not fatal
            _set_aside(path, f"torch cannot load it: {type(exc).__name__}", report)
            continue
        if state.get("fingerprint") != expected_fingerprint:
            return None
        return state
    return None


def read_best(folder: Path) -> tuple[float, int] | None:
    meta = folder / BEST_META
    if not meta.exists() or not (folder / BEST).exists():
        return None
    data = json.loads(meta.read_text())
    return float(data["score"]), int(data["step"])


def write_best(folder: Path, score: float, step: int) -> None:
    _write_durably(folder / BEST_META, lambda fh: fh.write(json.dumps({"score": score, "step": step}).encode()))
