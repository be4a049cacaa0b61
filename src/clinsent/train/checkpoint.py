"""Training checkpoints, so a killed job resumes where it stopped instead of restarting.

A checkpoint holds every trainable module, the optimiser and scheduler, the random number
generators, the curve so far and the step; it is written atomically and is only used when
its fingerprint (the settings, the base model and the batch plan) matches the job's.
The best model so far lives beside it in ``best/`` with a ``best.json`` that is the
authority on its step and score. The whole folder is removed when the job succeeds.
"""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

STATE = "state.pt"
BEST = "best"
BEST_META = "best.json"


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


def save_state(folder: Path, state: dict[str, Any]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / f".{STATE}.tmp"
    torch.save(state, tmp)
    tmp.replace(folder / STATE)


def load_state(folder: Path, expected_fingerprint: str) -> dict[str, Any] | None:
    """The saved state when it exists and belongs to this job; None otherwise."""
    path = folder / STATE
    if not path.exists():
        return None
    state: dict[str, Any] = torch.load(path, map_location="cpu", weights_only=False)
    return state if state.get("fingerprint") == expected_fingerprint else None


def read_best(folder: Path) -> tuple[float, int] | None:
    meta = folder / BEST_META
    if not meta.exists() or not (folder / BEST).exists():
        return None
    data = json.loads(meta.read_text())
    return float(data["score"]), int(data["step"])


def write_best(folder: Path, score: float, step: int) -> None:
    tmp = folder / f".{BEST_META}.tmp"
    tmp.write_text(json.dumps({"score": score, "step": step}))
    tmp.replace(folder / BEST_META)
