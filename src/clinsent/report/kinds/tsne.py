"""t-SNE of pairs before and after training (BioSimCSE's Figures 1 and 2): a seeded scikit-learn
t-SNE of the top-scored pairs' sentences of an STS eval set under each run's first seed, a
pair's two sentences with one marker, and their average cosine.

The runs are ``before`` and ``after`` training (first seeds); the paper reports the pairs'
average cosine as 86.5 before and 90.1 after (x 100)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from clinsent.config.declare import knob
from clinsent.errors import InputError
from clinsent.evaluation.metrics import cosine_rows
from clinsent.report.figures import pyplot, save_figure
from clinsent.report.kinds.base import FIGURE_KINDS, FigureKind, ReportContext, eval_set_names

if TYPE_CHECKING:
    from clinsent.report.kinds.base import PlanView

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

    def inputs(self, key: str, entry: Mapping[str, Any], plan: PlanView) -> dict[str, Any]:
        return {
            "embeddings": {role: plan.first_seed_embeddings(entry[role], entry["eval_set"]) for role in ROLES},
            "eval_set_files": plan.eval_set_files(entry["eval_set"]),
        }  # its pairs and scores

    def params(self, key: str, entry: Mapping[str, Any], plan: PlanView) -> dict[str, Any]:
        return {"eval_set": plan.eval_sets[entry["eval_set"]].params()}

    def points(self, key: str, entry: Mapping[str, Any], ctx: ReportContext) -> pd.DataFrame:
        from clinsent.embedding.vectors import read_embeddings
        from clinsent.tasks.config import task_from_params

        task = task_from_params(entry["eval_set"], ctx.params["eval_set"])
        return tsne_points(task, {role: read_embeddings(p) for role, p in ctx.inputs["embeddings"].items()}, entry)

    def draw(
        self, points: pd.DataFrame, key: str, entry: Mapping[str, Any], ctx: ReportContext, out_paths: list[Any]
    ) -> None:
        tsne_figure(points, entry, out_paths)


MARKERS = "o^sDv<>pP*Xh8d"


def top_pairs(task: Any, min_score: float | None, max_pairs: int) -> list[int]:
    """Indices of an STS set's highest-scored pairs: those at or above ``min_score`` (default the
    set's top score), at most ``max_pairs``, in file order."""
    scores = np.asarray(task.data.scores)
    floor = scores.max() if min_score is None else min_score
    return [int(i) for i in np.flatnonzero(scores >= floor)[:max_pairs]]


def tsne_points(
    task: Any, embeddings: Mapping[str, tuple[list[str], np.ndarray]], figure: Mapping[str, Any]
) -> pd.DataFrame:
    """Per run (before, after) and pair: the 2-D t-SNE coordinates of both sentences and the pair's cosine."""
    from sklearn.manifold import TSNE

    pairs = top_pairs(task, figure.get("min_score"), int(figure.get("max_pairs", 20)))
    if len(pairs) < 2:
        raise InputError(
            f"config: figures (tsne on {task.set_name})", f"{len(pairs)} pair(s) at the top score", "lower min_score"
        )
    s1 = [task.data.sentences1[i] for i in pairs]
    s2 = [task.data.sentences2[i] for i in pairs]
    rows = []
    for role in ("before", "after"):
        texts, vectors = embeddings[role]
        e1, e2 = task.lookup(texts, vectors, s1), task.lookup(texts, vectors, s2)
        cos = cosine_rows(e1, e2)
        both = np.vstack([e1, e2]).astype(np.float64)
        perplexity = min(float(figure.get("perplexity", 5)), len(both) - 1.0)
        xy = TSNE(
            n_components=2, perplexity=perplexity, random_state=int(figure.get("seed", 0)), init="pca"
        ).fit_transform(both)
        n = len(pairs)
        for k, pair in enumerate(pairs):
            rows.append(
                {
                    "run": figure[role],
                    "role": role,
                    "pair": pair + 1,
                    "gold": float(task.data.scores[pair]),
                    "cosine": float(cos[k]),
                    "x1": float(xy[k, 0]),
                    "y1": float(xy[k, 1]),
                    "x2": float(xy[n + k, 0]),
                    "y2": float(xy[n + k, 1]),
                }
            )
    return pd.DataFrame(rows)


def tsne_figure(points: pd.DataFrame, figure: Mapping[str, Any], out_paths: list[Any]) -> None:
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(8.4, 4.0))
    for ax, role in zip(axes, ("before", "after"), strict=True):
        sub = points[points["role"] == role].reset_index(drop=True)
        colours = plt.get_cmap("tab20")
        for k, r in sub.iterrows():
            style = {"marker": MARKERS[int(k) % len(MARKERS)], "color": colours(int(k) % 20), "s": 28}
            ax.scatter([r["x1"], r["x2"]], [r["y1"], r["y2"]], **style)
        mean_cos = 100 * sub["cosine"].mean() if len(sub) else float("nan")
        ax.set_title(f"{role}: {figure[role]} (average cosine {mean_cos:.1f})", fontsize=8)
        ax.set_xticks([])
        ax.set_yticks([])
    fig.suptitle(figure["caption"], fontsize=8, wrap=True)
    save_figure(fig, out_paths)
