"""t-SNE of pairs before and after training (BioSimCSE's Figures 1 and 2): a seeded scikit-learn
t-SNE of the top-scored pairs' sentences of an STS eval set under each run's first seed, a
pair's two sentences with one marker, and their average cosine (:mod:`clinsent.report.pair_figures`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from clinsent.report.kinds.base import FIGURE_KINDS, FigureKind, ReportContext, eval_set_names
from clinsent.settings import knob

if TYPE_CHECKING:
    import pandas as pd

    from clinsent.plan import Plan

ROLES = ("before", "after")


@dataclass(frozen=True)
class TsneKnobs:
    eval_set: str = knob("", "a pair eval set with scores", required=True)
    before: str = knob("", "the run before training (e.g. none@biolinkbert)", required=True)
    after: str = knob("", "the run after training", required=True)
    min_score: float | None = knob(None, "pairs scored at least this (default the top score)", type=["number", "null"])
    max_pairs: int = knob(20, "at most this many pairs", minimum=2)
    perplexity: float = knob(5, "t-SNE's perplexity", exclusiveMinimum=0)
    seed: int = knob(0, "t-SNE's draw", minimum=0)


@FIGURE_KINDS.register("tsne", settings=TsneKnobs)
class TsneFigure(FigureKind):
    def runs(self, key: str, entry: Mapping[str, Any]) -> list[tuple[str, str]]:
        return [(f"figures.{key}.{role}", entry[role]) for role in ROLES]

    def names(self, key: str, entry: Mapping[str, Any]) -> list[tuple[str, str, str]]:
        return eval_set_names(f"figures.{key}", entry["eval_set"])

    def inputs(self, key: str, entry: Mapping[str, Any], plan: Plan) -> dict[str, Any]:
        return {
            "embeddings": {role: plan.first_seed_embeddings(entry[role], entry["eval_set"]) for role in ROLES},
            "eval_set_files": plan.eval_set_files(entry["eval_set"]),
        }  # its pairs and scores

    def params(self, key: str, entry: Mapping[str, Any], plan: Plan) -> dict[str, Any]:
        return {"eval_set": plan.eval_sets[entry["eval_set"]].params()}

    def points(self, key: str, entry: Mapping[str, Any], ctx: ReportContext) -> pd.DataFrame:
        from clinsent.embed import read_embeddings
        from clinsent.report.pair_figures import tsne_points
        from clinsent.tasks.config import task_from_params

        task = task_from_params(entry["eval_set"], ctx.params["eval_set"])
        return tsne_points(task, {role: read_embeddings(p) for role, p in ctx.inputs["embeddings"].items()}, entry)

    def draw(
        self, points: pd.DataFrame, key: str, entry: Mapping[str, Any], ctx: ReportContext, out_paths: list[Any]
    ) -> None:
        from clinsent.report.pair_figures import tsne_figure

        tsne_figure(points, entry, out_paths)
