"""Training settings of one job, built from the validated config (a method's knobs override
the shared ``training`` block)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

OBJECTIVES = ("none", "simcse", "medse")


@dataclass(frozen=True)
class TrainSettings:
    objective: str
    pooling: str = "first_last"
    first_layer: int = 1
    steps: int = 2000
    batch_size: int = 32
    max_length: int = 128
    learning_rate: float = 3e-5
    temperature: float = 0.05
    eval_every: int = 25
    seed: int = 0
    lam: float = 0.1
    entity_encoder: str = "transformer"
    entity_layers: int = 1
    definition_trainable: bool = True
    definition_max_length: int = 64
    eval_batch_size: int = 64

    @classmethod
    def from_config(cls, training: dict[str, Any], method: dict[str, Any], seed: int) -> TrainSettings:
        names = {f.name for f in fields(cls)}
        renamed = {("lam" if k == "lambda" else k): v for k, v in method.items()}
        merged = {k: v for k, v in {**training, **renamed}.items() if k in names}
        merged["seed"] = int(seed)
        return cls(**merged)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
