"""Tables and figures of the healthcare-LM paper (config ``figures.<id>.kind`` and
``tables.<id>.kind``):

- figure ``line`` (Figure 3, F1 against samples per class; Figure 4, F1 against frozen layers):
  one line per cited run, a point per (x, eval set or fine-tune entry), a metric's mean ± std
  over seeds, the paper's values where given;
- figure ``box`` (Figure 5): a ``class_similarity`` eval set's within- and between-class cosine
  box plots per cited run (the box figures averaged over seeds), each run in its own panel and
  y scale, as the paper draws them;
- figure ``doc_lengths`` (Figure 7) and table ``doc_lengths`` (Table 12): the documents stage's
  length statistics (whitespace tokens) of the pre-training partition; the table gives the share
  of documents at or above each minimum length beside the paper's columns;
- table ``cited``: the paper's numbers for data we cannot have (the paper's OHFT and PSIR rows
  are private data), shown as the paper's only.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from clinsent.report.figures import pyplot, save_figure
from clinsent.report.paper import MISSING, cell_values

BOX_STATS = ("whislo", "q1", "med", "q3", "whishi", "mean")


def line_points(
    summary: pd.DataFrame, figure: Mapping[str, Any], eval_sets: Mapping[str, str], default_base: str
) -> pd.DataFrame:
    rows = []
    for series in figure["lines"]:
        paper = series.get("paper") or []
        for k, point in enumerate(figure["xs"]):
            metric = figure.get("metric") or eval_sets[point["eval_set"]]
            values = cell_values(summary, series["run"], default_base, point["eval_set"], metric)
            rows.append(
                {
                    "label": series["label"],
                    "run": series["run"],
                    "x": point["x"],
                    "eval_set": point["eval_set"],
                    "metric": metric,
                    "seeds": len(values),
                    "mean": float(values.mean()) if len(values) else np.nan,
                    "std": float(values.std(ddof=1)) if len(values) > 1 else 0.0,
                    "paper": paper[k] if k < len(paper) else None,
                }
            )
    return pd.DataFrame(rows, columns=["label", "run", "x", "eval_set", "metric", "seeds", "mean", "std", "paper"])


def line_figure(points: pd.DataFrame, figure: Mapping[str, Any], paper_label: str, out_paths: list[Any]) -> None:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5.2, 3.6))
    cmap = plt.get_cmap("tab10")
    for i, (label, sub) in enumerate(points.groupby("label", sort=False)):
        ax.errorbar(sub["x"], sub["mean"], yerr=sub["std"], marker="o", capsize=2, color=cmap(i % 10), label=label)
        paper = pd.to_numeric(sub["paper"], errors="coerce")
        if paper.notna().any():
            ax.plot(
                sub["x"], paper, ls="--", marker="x", color=cmap(i % 10), alpha=0.6, label=f"{label} ({paper_label})"
            )
    ax.set_xlabel(figure.get("xlabel", "x"))
    ax.set_ylabel(str(points["metric"].iloc[0]) if len(points) else "")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    ax.set_title(figure["caption"], fontsize=8, wrap=True)
    save_figure(fig, out_paths)


def box_points(summary: pd.DataFrame, figure: Mapping[str, Any], default_base: str) -> pd.DataFrame:
    rows = []
    for panel in figure["panels"]:
        for relation in ("within", "between"):
            rec: dict[str, Any] = {"label": panel["label"], "run": panel["run"], "relation": relation}
            for stat in BOX_STATS:
                values = cell_values(summary, panel["run"], default_base, figure["eval_set"], f"{relation}_{stat}")
                rec[stat] = float(values.mean()) if len(values) else np.nan
            rec["seeds"] = len(values)
            rows.append(rec)
    return pd.DataFrame(rows, columns=["label", "run", "relation", "seeds", *BOX_STATS])


def box_figure(points: pd.DataFrame, figure: Mapping[str, Any], out_paths: list[Any]) -> None:
    plt = pyplot()
    labels = list(dict.fromkeys(points["label"]))
    fig, axes = plt.subplots(1, max(len(labels), 1), figsize=(2.4 * max(len(labels), 1), 3.4), squeeze=False)
    for ax, label in zip(axes[0], labels):
        sub = points[points["label"] == label]
        stats = [
            {
                "label": r.relation,
                "whislo": r.whislo,
                "q1": r.q1,
                "med": r.med,
                "q3": r.q3,
                "whishi": r.whishi,
                "mean": r.mean,
                "fliers": [],
            }
            for r in sub.itertuples()
            if not np.isnan(r.med)
        ]
        if stats:
            ax.bxp(stats, showmeans=True)
        ax.set_title(label, fontsize=8)
        ax.set_ylabel("cosine similarity", fontsize=7)
    fig.suptitle(figure["caption"], fontsize=8)
    save_figure(fig, out_paths)


def read_stats(path: str) -> dict[str, Any]:
    return dict(json.loads(Path(path).read_text(encoding="utf-8")))


def length_points(stats: Mapping[str, Any], figure: Mapping[str, Any]) -> pd.DataFrame:
    """Documents per length bin (whitespace tokens) of the figure's partition."""
    part = stats[figure.get("partition", "pretrain")]
    edges, counts = part["histogram"]["edges"], part["histogram"]["counts"]
    his = [*edges[1:], None]
    return pd.DataFrame(
        {
            "from": edges,
            "below": his,
            "documents": counts,
            "share": np.asarray(counts, dtype=float) / max(sum(counts), 1),
        }
    )


def length_figure(
    points: pd.DataFrame, stats: Mapping[str, Any], figure: Mapping[str, Any], out_paths: list[Any]
) -> None:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5.2, 3.4))
    names = [f"{int(a)}+" if pd.isna(b) else f"{int(a)}-{int(b) - 1}" for a, b in zip(points["from"], points["below"])]
    ax.bar(range(len(points)), points["documents"])
    ax.set_xticks(range(len(points)), names, rotation=45, ha="right", fontsize=7)
    ax.set_xlabel("tokens per document (whitespace)")
    ax.set_ylabel("documents")
    median = stats[figure.get("partition", "pretrain")]["quantiles"].get("0.5")
    ax.set_title(
        f"{figure['caption']} (median {median:.0f})" if median is not None else figure["caption"],
        fontsize=8,
        wrap=True,
    )
    save_figure(fig, out_paths)


def length_table(table: Mapping[str, Any], stats: Mapping[str, Any], paper_label: str) -> pd.DataFrame:
    """Table 12: per minimum length (a row's label), the share of our pre-training documents at
    or above it, and the paper's columns (``columns``)."""
    shares = stats["pretrain"]["min_length_share"]
    counts = stats["pretrain"]["min_length_count"]
    heads = table.get("columns") or []
    rows = []
    for row in table["rows"]:
        key = str(row["label"])
        rec = {
            "min. document length": key,
            "ours: share": f"{shares[key]:.2f}" if key in shares else MISSING,
            "ours: documents": str(counts[key]) if key in counts else MISSING,
        }
        paper = (row.get("paper") or [[]])[0] or []
        for i, head in enumerate(heads):
            rec[f"{head} ({paper_label})"] = paper[i] if i < len(paper) and paper[i] is not None else MISSING
        rows.append(rec)
    return pd.DataFrame(rows)


def cited_table(table: Mapping[str, Any], paper_label: str) -> pd.DataFrame:
    """Rows of the paper's numbers only (data we cannot have), under ``columns``."""
    heads = table.get("columns") or []
    rows = []
    for row in table["rows"]:
        paper = (row.get("paper") or [[]])[0] or []
        rec = {"group": row.get("group", ""), "row": row["label"]}
        rec.update(
            {
                f"{h} ({paper_label})": paper[i] if i < len(paper) and paper[i] is not None else MISSING
                for i, h in enumerate(heads)
            }
        )
        rows.append(rec)
    df = pd.DataFrame(rows)
    return df if df["group"].astype(bool).any() else df.drop(columns="group")
