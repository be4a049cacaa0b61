"""A toy method and a toy evaluation task, registered from outside the package through the
config's ``plugins`` (tests/test_plugins.py): nothing in the trainer, the rules or the scripts
names them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from clinsent.losses.base import MethodLoss
from clinsent.methods.base import METHODS, Method, SentencePlanSettings, TrainedSettings
from clinsent.settings import knob
from clinsent.tasks.base import TASKS, Task


@dataclass(frozen=True)
class SpreadSettings(TrainedSettings, SentencePlanSettings):
    scale: float = knob(1.0, "weight of the spread loss", minimum=0)


class SpreadLoss(MethodLoss):
    """Pushes a batch's normalised embeddings apart: mean pairwise cosine."""

    def __init__(self, encoder: Any, settings: SpreadSettings) -> None:
        super().__init__()
        self.encoder, self.scale = encoder, settings.scale

    def prepare(self, rows: pd.DataFrame, generator: torch.Generator) -> dict[str, Any]:
        return {"features": self.encoder.tokenize(rows["text"].tolist())}

    def forward(self, batch: dict[str, Any]) -> dict[str, torch.Tensor]:
        emb = torch.nn.functional.normalize(self.encoder.embed_batch(batch["features"]), dim=-1)
        return {"spread": self.scale * (emb @ emb.T).mean()}


@METHODS.register("toy_spread")
class Spread(Method):
    name = "toy_spread"
    settings_class = SpreadSettings

    def build_loss(self, encoder: Any) -> MethodLoss:
        assert isinstance(self.settings, SpreadSettings)
        return SpreadLoss(encoder, self.settings)


@dataclass(frozen=True)
class NormSettings:
    path: str = knob("", "a text file, one sentence per line", required=True)


@TASKS.register("toy_norm")
class MeanNorm(Task):
    """The mean L2 norm of the embeddings of a file's lines."""

    name = "toy_norm"
    settings_class = NormSettings
    headline = "mean_norm"
    metrics = ("mean_norm",)

    def files(self) -> list[str]:
        return [self.settings.path]

    def read(self) -> list[str]:
        return [line.strip() for line in Path(self.settings.path).read_text().splitlines() if line.strip()]

    def texts(self) -> list[str]:
        return list(dict.fromkeys(self.data))

    def score(self, texts: list[str], vectors: np.ndarray, context: Mapping[str, Any] | None = None) -> dict[str, float]:
        return {"mean_norm": float(np.linalg.norm(vectors, axis=1).mean())}
