"""Training settings of one job, built from the validated config (a method's knobs override
the shared ``training`` block). Every field is a knob of ``methods.<name>`` or ``training``
(``lambda`` in the config is ``lam`` here); config/README.md documents each."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

OBJECTIVES = ("none", "simcse", "medse", "ct")
OPTIMIZERS = ("adamw", "rmsprop")


@dataclass(frozen=True)
class TrainSettings:
    objective: str
    pooling: str = "first_last"
    first_layer: int = 1
    steps: int = 2000
    batch_size: int = 32
    max_length: int = 128
    learning_rate: float = 3e-5
    optimizer: str = "adamw"
    temperature: float = 0.05
    eval_every: int = 25
    checkpoint_every: int = 250
    seed: int = 0
    dropout: bool = True
    augmentation: str = "dropout"
    augmentation_rate: float = 0.15
    lam: float = 0.1
    entity_encoder: str = "transformer"
    entity_layers: int = 1
    perturbation: str = "none"
    definition_model: str | None = None
    definition_pooling: str | None = None
    definition_trainable: bool = True
    definition_max_length: int = 64
    eval_batch_size: int = 64

    @classmethod
    def names(cls) -> set[str]:
        """Config keys that are training settings (``lambda`` for ``lam``)."""
        return {("lambda" if f.name == "lam" else f.name) for f in fields(cls)}

    @classmethod
    def from_config(cls, training: dict[str, Any], method: dict[str, Any], seed: int) -> TrainSettings:
        names = {f.name for f in fields(cls)}
        renamed = {("lam" if k == "lambda" else k): v for k, v in {**training, **method}.items()}
        merged = {k: v for k, v in renamed.items() if k in names}
        merged["seed"] = int(seed)
        return cls(**merged)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
