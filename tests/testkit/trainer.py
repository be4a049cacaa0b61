"""The trainer tests' small world: 32 clinical sentences with a defined disease each, an STS set
over the diseases, and a method entry at test scale (tests/train/test_trainer.py, and the
distributed trainer's processes, tests/train/distributed_worker.py)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from clinsent.evaluation.sts_data import StsSet
from clinsent.tasks.base import Task
from clinsent.tasks.sts import Sts

from testkit.methods import resolve_method

DISEASES = ["heart failure", "diabetes", "asthma", "pneumonia", "sepsis", "gout", "anemia", "migraine"]


def corpus() -> tuple[pd.DataFrame, pd.DataFrame]:
    sents, ents = [], []
    for i in range(32):
        d = DISEASES[i % len(DISEASES)]
        text = f"The patient number {i} has a history of {d} and was seen today."
        sents.append((i, text))
        start = text.index(d)
        ents.append((i, 0, start, start + len(d), f"T{i % len(DISEASES)}", f"A disease called {d}."))
    return (
        pd.DataFrame(sents, columns=["sent_id", "text"]),
        pd.DataFrame(ents, columns=["sent_id", "ent_idx", "start", "end", "term_id", "definition"]),
    )


def sts(name: str) -> Task:
    s1 = [f"History of {d}." for d in DISEASES]
    s2 = [f"The patient has {d}." for d in DISEASES[::-1]]
    return Sts.from_data(name, StsSet(name, s1, s2, np.linspace(0, 5, len(DISEASES))))


def method(objective: str, **knobs: Any) -> Any:
    base: dict[str, Any] = {
        "steps": 4,
        "batch_size": 8,
        "max_length": 32,
        "learning_rate": 1e-3,
        "eval_every": 2,
        "checkpoint_every": 0,
    }
    if objective == "medse":
        base.update({"lambda": 0.5, "entity_encoder": "transformer"})
    if objective == "none":
        base = {"max_length": 32}
    return resolve_method("m", {"objective": objective, **base, **knobs}, {}, [0]).method
