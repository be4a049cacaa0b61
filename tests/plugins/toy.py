"""A toy method, a toy evaluation task and a toy table kind, registered from outside the package
through the config's ``plugins`` (tests/workflow/test_plugins.py): nothing in the trainer, the rules, the
schema, the report or the scripts names them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from clinsent.config.declare import knob
from clinsent.losses.base import MethodLoss
from clinsent.methods.base import METHODS, Method
from clinsent.methods.knobs import SentencePlanSettings, TrainedSettings
from clinsent.report.kinds.base import TABLE_KINDS, ReportContext, TableKind
from clinsent.tasks.base import TASKS, Task


@dataclass(frozen=True)
class SpreadSettings(TrainedSettings, SentencePlanSettings):
    scale: float = knob(1.0, "weight of the spread loss", minimum=0)


class SpreadLoss(MethodLoss):
    """Pushes a batch's normalised embeddings apart: ``scale`` x their mean pairwise cosine.

    Inputs: rows of ``text`` (tokenized as ``features``). Output: ``{"spread": loss}``.
    Knobs: ``scale``, taken in ``__init__`` like a sentence-transformers loss (its default is the
    settings' knob: written once)."""

    def __init__(self, encoder: Any, *, scale: float = SpreadSettings.scale) -> None:
        super().__init__()
        self.encoder, self.scale = encoder, scale

    def prepare(self, rows: pd.DataFrame, generator: torch.Generator) -> dict[str, Any]:
        return {"features": self.encoder.tokenize(rows["text"].tolist())}

    def forward(self, batch: dict[str, Any]) -> dict[str, torch.Tensor]:
        emb = torch.nn.functional.normalize(self.encoder.embed_batch(batch["features"]), dim=-1)
        return {"spread": self.scale * (emb @ emb.T).mean()}


@METHODS.register("toy_spread", settings=SpreadSettings)
class Spread(Method[SpreadSettings]):
    # a plugin file has no importable module name for ``loss_class``: it builds its loss itself
    def build_loss(self, encoder: Any) -> MethodLoss:
        return SpreadLoss(encoder, **self.loss_knobs(SpreadLoss))


@dataclass(frozen=True)
class NormSettings:
    path: str = knob("", "a text file, one sentence per line", required=True)


@TASKS.register("toy_norm", settings=NormSettings)
class MeanNorm(Task[NormSettings]):
    """The mean L2 norm of the embeddings of a file's lines."""

    headline = "mean_norm"
    metrics = ("mean_norm",)

    def files(self) -> list[str]:
        return [self.settings.path]

    def read(self) -> list[str]:
        return [line.strip() for line in Path(self.settings.path).read_text().splitlines() if line.strip()]

    def texts(self) -> list[str]:
        return list(dict.fromkeys(self.data))

    def score(
        self, texts: list[str], vectors: np.ndarray, context: Mapping[str, Any] | None = None
    ) -> dict[str, float]:
        return {"mean_norm": float(np.linalg.norm(vectors, axis=1).mean())}


@dataclass(frozen=True)
class RankingKnobs:
    eval_set: str = knob("", "the eval set ranked on", required=True)
    runs: tuple[str, ...] = knob((), "the runs ranked (method or method@base_model)", required=True, minItems=1)
    descending: bool = knob(True, "best first")


@TABLE_KINDS.register("toy_ranking", settings=RankingKnobs)
class RankingTable(TableKind):
    """The cited runs ranked by their mean headline on one eval set, with the size of its file:
    a table kind from outside the package (its keys, cited runs, input file and table), which no
    rule, schema or report module names."""

    def runs(self, key: str, entry: Mapping[str, Any]) -> list[tuple[str, str]]:
        return [(f"tables.{key}.runs[{i}]", r) for i, r in enumerate(entry["runs"])]

    def names(self, key: str, entry: Mapping[str, Any]) -> list[tuple[str, str, str]]:
        return [(f"tables.{key}.eval_set", entry["eval_set"], "eval_sets")]

    def inputs(self, key: str, entry: Mapping[str, Any], plan: Any) -> dict[str, Any]:
        return {"lines": plan.eval_set_files(entry["eval_set"])}

    def table(self, key: str, entry: Mapping[str, Any], ctx: ReportContext) -> pd.DataFrame:
        metric = ctx.eval_sets[entry["eval_set"]]
        s = ctx.summary[(ctx.summary["eval_set"] == entry["eval_set"]) & (ctx.summary["metric"] == metric)]
        means = {run: float(s.loc[s["method"] == run.partition("@")[0], "value"].mean()) for run in entry["runs"]}
        order = sorted(means, key=means.__getitem__, reverse=entry["descending"])
        lines = sum(len(Path(p).read_text().splitlines()) for p in ctx.inputs["lines"])
        return pd.DataFrame(
            {
                "rank": range(1, len(order) + 1),
                "run": order,
                metric: [f"{means[r]:.4f}" for r in order],
                "lines": lines,
            }
        )
