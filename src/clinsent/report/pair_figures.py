"""Figures of the supervised-pairs papers (config ``figures.<id>.kind``):

- ``bar`` (the clinical NLI study's MRR and BIOSSES bar charts): one metric of one eval set (or
  fine-tune entry) per cited run, mean ± std over seeds, the paper's value beside it;
- ``confusion`` (its confusion matrices): a probe's test confusion matrix per cited run, counts
  averaged over seeds, from the ``confusion:<true>:<predicted>`` metrics in summary.csv;
- ``tsne`` (BioSimCSE Figures 1-2): a seeded scikit-learn t-SNE of the embeddings of an STS
  set's highest-scored pairs under the run ``before`` and the run ``after`` (first seeds), the
  two sentences of a pair drawn with the same marker, and the average cosine of those pairs
  under each (the paper: 86.5 before, 90.1 after, x 100).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from clinsent.errors import InputError
from clinsent.evaluation.metrics import cosine_rows
from clinsent.report.figures import pyplot, save_figure
from clinsent.report.paper import cell_values

MARKERS = "o^sDv<>pP*Xh8d"


def bar_points(
    summary: pd.DataFrame, figure: Mapping[str, Any], eval_sets: Mapping[str, str], default_base: str
) -> pd.DataFrame:
    metric = figure.get("metric") or eval_sets[figure["eval_set"]]
    rows = []
    for bar in figure["bars"]:
        values = cell_values(summary, bar["run"], default_base, figure["eval_set"], metric)
        rows.append(
            {
                "label": bar["label"],
                "run": bar["run"],
                "metric": metric,
                "seeds": len(values),
                "mean": float(values.mean()) if len(values) else np.nan,
                "std": float(values.std(ddof=1)) if len(values) > 1 else 0.0,
                "paper": bar.get("paper"),
            }
        )
    return pd.DataFrame(rows, columns=["label", "run", "metric", "seeds", "mean", "std", "paper"])


def bar_figure(points: pd.DataFrame, figure: Mapping[str, Any], paper_label: str, out_paths: list[Any]) -> None:
    plt = pyplot()
    x = np.arange(len(points))
    fig, ax = plt.subplots(figsize=(max(4.0, 0.9 * len(points) + 1.5), 3.4))
    has_paper = points["paper"].notna().any()
    width = 0.4 if has_paper else 0.7
    ax.bar(
        x - (width / 2 if has_paper else 0),
        points["mean"].fillna(0),
        width,
        yerr=points["std"],
        capsize=2,
        label="ours (mean ± std)",
    )
    if has_paper:
        ax.bar(x + width / 2, pd.to_numeric(points["paper"]).fillna(0), width, label=paper_label, alpha=0.6)
    ax.set_xticks(x, points["label"], rotation=30, ha="right", fontsize=8)
    ax.set_ylabel(str(points["metric"].iloc[0]) if len(points) else "")
    ax.legend(fontsize=7)
    ax.set_title(figure["caption"], fontsize=8, wrap=True)
    save_figure(fig, out_paths)


def confusion_points(summary: pd.DataFrame, figure: Mapping[str, Any], default_base: str) -> pd.DataFrame:
    classes = list(figure["classes"])
    rows = []
    for panel in figure["panels"]:
        for t in classes:
            for p in classes:
                values = cell_values(summary, panel["run"], default_base, figure["eval_set"], f"confusion:{t}:{p}")
                rows.append(
                    {
                        "label": panel["label"],
                        "run": panel["run"],
                        "true": t,
                        "predicted": p,
                        "seeds": len(values),
                        "count": float(values.mean()) if len(values) else np.nan,
                    }
                )
    return pd.DataFrame(rows, columns=["label", "run", "true", "predicted", "seeds", "count"])


def confusion_figure(points: pd.DataFrame, figure: Mapping[str, Any], out_paths: list[Any]) -> None:
    plt = pyplot()
    classes, panels = list(figure["classes"]), list(figure["panels"])
    cols = min(4, len(panels))
    rows = -(-len(panels) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.0 * cols, 2.9 * rows), squeeze=False)
    for ax in axes.flat[len(panels) :]:
        ax.axis("off")
    for ax, panel in zip(axes.flat, panels, strict=False):
        sub = points[points["label"] == panel["label"]]
        matrix = sub.pivot(index="true", columns="predicted", values="count").reindex(index=classes, columns=classes)
        ax.imshow(matrix.fillna(0).to_numpy(), cmap="Blues")
        for i in range(len(classes)):
            for j in range(len(classes)):
                v = matrix.iat[i, j]
                ax.text(j, i, "–" if np.isnan(v) else f"{v:.0f}", ha="center", va="center", fontsize=7)
        ax.set_xticks(range(len(classes)), classes, rotation=30, fontsize=6)
        ax.set_yticks(range(len(classes)), classes, fontsize=6)
        ax.set_title(panel["label"], fontsize=8)
        ax.set_xlabel("predicted", fontsize=7)
        ax.set_ylabel("true", fontsize=7)
    fig.suptitle(figure["caption"], fontsize=8, wrap=True)
    save_figure(fig, out_paths)


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
