"""Paper tables and figures that are not "runs x eval sets" (config ``tables.<id>.kind`` and
``figures.<id>.kind``), first needed by the augmentation paper:

- ``corpus_stats`` (its Table 1): sentences, words and characters of sentence corpora;
- ``eval_stats`` (its Table 3): pairs or items per split of eval sets, task and metric;
- ``augmentations`` (its Table 2): one sentence from the config through each cited method's
  positive view (:meth:`clinsent.methods.base.Method.example_view`, seeded);
- ``retrieval_examples`` (its Table 7): for query texts of one eval set, the nearest other texts of that
  set by cosine under each cited run (its first seed). Only eval-set text is ever shown, never
  notes, and only when a config asks for such a table;
- figure ``fraction`` (its Figure 1): the headline metric against the share of the training
  corpus, a line per series, a panel per eval set (mean over seeds).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from clinsent.errors import InputError
from clinsent.report.paper import MISSING, cell_values

if TYPE_CHECKING:
    from clinsent.methods.base import Method


def corpus_stats_table(table: Mapping[str, Any], stats: Mapping[str, str]) -> pd.DataFrame:
    """A row per file of each corpus (labelled by the corpus' ``labels``) and, for several files, their total."""
    rows = []
    for name in table["corpora"]:
        report = json.loads(Path(stats[name]).read_text())
        labels = table.get("labels", {}).get(name) or [Path(f["path"]).name for f in report["files"]]
        per = list(zip(labels, report["per_file"], strict=False))
        if len(per) > 1:
            rows += [{"corpus": label, **_counts(s)} for label, s in per]
        rows.append({"corpus": name if len(per) > 1 else per[0][0], **_counts(report["stats"])})
    return pd.DataFrame(rows, columns=["corpus", "sentences", "words", "characters", "words/sentence"])


def _counts(s: Mapping[str, float]) -> dict[str, str]:
    mean = s.get("mean_words", float("nan"))
    return {
        "sentences": f"{int(s['sentences']):,}",
        "words": f"{int(s['words']):,}",
        "characters": f"{int(s['characters']):,}",
        "words/sentence": f"{mean:.1f}" if mean == mean else MISSING,
    }


def eval_stats_table(table: Mapping[str, Any], stats: Mapping[str, str]) -> pd.DataFrame:
    """Train / dev / test counts (or the one count) of each eval set, with its task and metric."""
    rows = []
    for name in table["eval_sets"]:
        st = json.loads(Path(stats[name]).read_text())
        splits = st["splits"]
        rows.append(
            {
                "dataset": name,
                "train": splits.get("train", MISSING),
                "dev": splits.get("dev", MISSING),
                "test": splits.get("test", splits.get("all", splits.get("pairs", MISSING))),
                "task": st["task"],
                "metric": st["metric"],
                "used": st["used"],
            }
        )
    return pd.DataFrame(rows, columns=["dataset", "train", "dev", "test", "task", "metric", "used"])


def augmentation_table(table: Mapping[str, Any], methods: Mapping[str, Method]) -> pd.DataFrame:
    """``table.sentence`` through each row's method (``rows[*].method``; seed ``table.seed``)."""
    sentence, seed = str(table["sentence"]), int(table.get("seed", 0))
    rows = [{"method": "None", "text": sentence}]
    for row in table["rows"]:
        view = methods[row["method"]].example_view(sentence, seed)
        rows.append({"method": row["label"], "text": view if view is not None else f"{sentence} (same text)"})
    return pd.DataFrame(rows, columns=["method", "text"])


def retrieval_table(table: Mapping[str, Any], embeddings: Mapping[str, tuple[list[str], np.ndarray]]) -> pd.DataFrame:
    """For each query (a text of the eval set), its ``k`` nearest other texts under each run."""
    k = int(table.get("k", 2))
    runs = list(table["runs"])
    texts = embeddings[runs[0]][0]
    queries = table.get("queries") or []
    if isinstance(queries, int):
        queries = [
            texts[i] for i in np.random.default_rng(0).choice(len(texts), min(queries, len(texts)), replace=False)
        ]
    check_queries("<retrieval_examples>", table, texts)
    labels = [table.get("labels", {}).get(r, r) for r in runs]
    rows: list[dict[str, str]] = []
    for text in queries:
        block = [{"query": text if r == 0 else "", "rank": f"#{r + 1}"} for r in range(k)]
        for run, label in zip(runs, labels, strict=True):
            run_texts, vectors = embeddings[run]
            at = {t: i for i, t in enumerate(run_texts)}[text]
            unit = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
            sims = unit @ unit[at]
            sims[at] = -np.inf  # never the query itself
            for r, j in enumerate(np.argsort(-sims, kind="stable")[:k]):
                block[r][label] = f"{run_texts[j]} ({sims[j]:.3f})"
        rows += block
    return pd.DataFrame(rows, columns=["query", "rank", *labels])


def check_queries(tid: str, table: Mapping[str, Any], texts: list[str]) -> None:
    """Stop before any job when a retrieval query is not a text of its eval set (named by number)."""
    queries = table.get("queries")
    if isinstance(queries, int):
        return
    known = set(texts)
    for q, text in enumerate(queries or []):
        if text not in known:
            raise InputError(
                f"config: tables.{tid}.queries[{q}]",
                f"query {q} is not a text of eval set {table['eval_set']}",
                "use texts of the eval set (never notes), or a number of random ones",
            )


def fraction_points(
    summary: pd.DataFrame, figure: Mapping[str, Any], eval_sets: Mapping[str, str], default_base: str
) -> pd.DataFrame:
    """Mean and std over seeds of each series' runs at each fraction, per eval set."""
    rows = []
    for series in figure["series"]:
        for point in series["points"]:
            for name in figure["eval_sets"]:
                values = cell_values(summary, point["run"], default_base, name, eval_sets[name])
                if len(values):
                    rows.append(
                        {
                            "series": series["label"],
                            "fraction": float(point["x"]),
                            "eval_set": name,
                            "metric": eval_sets[name],
                            "run": point["run"],
                            "seeds": len(values),
                            "mean": float(values.mean()),
                            "std": float(values.std(ddof=1)) if len(values) > 1 else 0.0,
                        }
                    )
    return pd.DataFrame(rows, columns=["series", "fraction", "eval_set", "metric", "run", "seeds", "mean", "std"])


def fraction_figure(points: pd.DataFrame, figure: Mapping[str, Any], out_paths: list[Any]) -> None:
    from clinsent.report.figures import pyplot, save_figure

    plt = pyplot()

    sets = list(figure["eval_sets"])
    fig, axes = plt.subplots(1, len(sets), figsize=(4.2 * len(sets), 3.6), squeeze=False)
    for ax, name in zip(axes[0], sets, strict=True):
        sub = points[points["eval_set"] == name]
        for label, g in sub.groupby("series", sort=False):
            g = g.sort_values("fraction")
            ax.errorbar(
                100 * g["fraction"], g["mean"], yerr=g["std"], marker="o", markersize=3, capsize=2, label=label
            )
        metric = sub["metric"].iloc[0] if len(sub) else ""
        ax.set_title(f"{name} ({metric})" if metric else name, fontsize=9)
        ax.set_xscale("log")
        ax.set_xlabel("training data (%)")
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("score")
    axes[0][-1].legend(fontsize=7, loc="best")
    fig.suptitle(figure["caption"], fontsize=9, wrap=True)
    save_figure(fig, out_paths)
