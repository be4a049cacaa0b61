"""The paper's tables and Figure 2 from ``summary.csv``, with the paper's own numbers beside ours.

A table (config ``tables.<id>``) has rows; each row cites one run per column group
(``columns``: e.g. S_all and S_ent, or MED-SE and SimCSE) and may carry the paper's numbers
(``paper``: per column group, one string per eval set). The rendered columns are, for each
eval set and column group, ours (the eval set's headline metric, Spearman for STS, mean ± std
over seeds) and the paper's, marked
"(paper)". ``transpose`` renders rows as columns (MED-SE Table 6's layout). ``eval_sets``
restricts and orders the eval sets a table shows; ``average`` adds their mean (per seed, then
mean ± std over seeds: the augmentation paper's "Avg."); ``percent`` shows 100 x the metric to
two decimals (that paper's layout); ``metrics`` shows these metrics of each eval set instead of
its headline (the clinical NLI study's accuracy, precision, recall, F1; Pearson and its p-value,
shown in scientific notation as every metric ending in ``_p``). Other kinds of table (``kind``) are built in
:mod:`clinsent.report.extras`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from clinsent.report.paired import Paired
    from clinsent.report.spread import PairedTest

from clinsent.errors import InputError
from clinsent.experiments import split_run
from clinsent.report.tables import fmt_mean_std

MISSING = "–"


def cell_values(
    summary: pd.DataFrame, ref: str, default_base: str, eval_set: str, metric: str = "spearman"
) -> np.ndarray:
    method, base = split_run(ref, default_base)
    sel = summary[
        (summary["method"] == method)
        & (summary["base_model"] == base)
        & (summary["eval_set"] == eval_set)
        & (summary["metric"] == metric)
    ]
    return sel.sort_values("seed")["value"].to_numpy()


def average_values(summary: pd.DataFrame, ref: str, default_base: str, eval_sets: dict[str, str]) -> np.ndarray:
    """Per seed, the mean over ``eval_sets`` of their headline metric (seeds missing a set are left out)."""
    method, base = split_run(ref, default_base)
    sel = summary[(summary["method"] == method) & (summary["base_model"] == base)]
    sel = sel[[eval_sets.get(e) == m for e, m in zip(sel["eval_set"], sel["metric"], strict=True)]]
    per_seed = sel.groupby("seed")["value"].agg(["mean", "count"])
    return per_seed.loc[per_seed["count"] == len(eval_sets), "mean"].to_numpy()


def _columns(table: dict[str, Any], eval_sets: dict[str, str]) -> tuple[dict[str, str], list[tuple[str, str, str]]]:
    """The table's eval sets (name -> headline) and its columns (header, eval set, metric)."""
    if table.get("eval_sets"):
        eval_sets = {name: eval_sets[name] for name in table["eval_sets"]}
    return eval_sets, (
        [(f"{name} {m}", name, m) for name in eval_sets for m in table["metrics"]]
        if table.get("metrics")
        else [(name, name, metric) for name, metric in eval_sets.items()]
    )


def paper_cells(
    summary: pd.DataFrame, table: dict[str, Any], eval_sets: dict[str, str], default_base: str
) -> tuple[dict[str, dict[str, np.ndarray]], dict[str, str]]:
    """A runs table's values over seeds, column -> row (its group / label) -> values, and each column's
    metric: what :func:`clinsent.report.spread.check` judges (the Avg. column is left out: it
    follows from the others)."""
    _, columns = _columns(table, eval_sets)
    groups = table.get("columns") or [""]
    cells: dict[str, dict[str, np.ndarray]] = {}
    metrics: dict[str, str] = {}
    for name, eval_set, metric in columns:
        for g, col in enumerate(groups):
            head = f"{name} {col}".strip()
            metrics[head] = metric
            cells[head] = {
                " / ".join(filter(None, (row.get("group"), row["label"]))): cell_values(
                    summary, row["cells"][g], default_base, eval_set, metric
                )
                for row in table["rows"]
                if g < len(row["cells"]) and row["cells"][g]
            }
    return cells, metrics


def paper_pairs(table: dict[str, Any], eval_sets: dict[str, str], default_base: str, paired: Paired) -> PairedTest:
    """The paired test between two rows of a runs table's column (the same heads and row labels
    as :func:`paper_cells`): their cited runs compared on the column's eval set and metric."""
    _, columns = _columns(table, eval_sets)
    groups = table.get("columns") or [""]
    heads = {
        f"{name} {col}".strip(): (eval_set, metric, g)
        for name, eval_set, metric in columns
        for g, col in enumerate(groups)
    }
    refs = {" / ".join(filter(None, (row.get("group"), row["label"]))): row["cells"] for row in table["rows"]}

    def test(head: str, a: str, b: str) -> bool | None:
        eval_set, metric, g = heads[head]
        ra, rb = refs[a][g], refs[b][g]
        return paired.differ(split_run(ra, default_base), split_run(rb, default_base), eval_set, metric)

    return test


def paper_table(
    summary: pd.DataFrame,
    table: dict[str, Any],
    eval_sets: dict[str, str],
    default_base: str,
    paper_label: str = "paper",
) -> pd.DataFrame:
    """``eval_sets``: name -> the headline metric of its task (Spearman for STS)."""
    eval_sets, columns = _columns(table, eval_sets)
    scale, decimals = (100.0, 2) if table.get("percent") else (1.0, 3)
    if table.get("average"):
        columns.append(("Avg.", "Avg.", ""))
    groups = table.get("columns") or [""]
    has_group = any(r.get("group") for r in table["rows"])
    records = []
    for i, row in enumerate(table["rows"]):
        if len(row["cells"]) != len(groups):
            raise InputError(
                f"config: tables, row {i} ({row['label']})",
                f"{len(row['cells'])} cells for {len(groups)} column groups {groups}",
                "give the row one cell per column group",
            )
        rec: dict[str, str] = {"group": row.get("group", "")} if has_group else {}
        rec["row"] = row["label"]
        paper = row.get("paper") or [None] * len(groups)
        for e, (name, eval_set, metric) in enumerate(columns):
            for g, col in enumerate(groups):
                head = f"{name} {col}".strip()
                ref = row["cells"][g]
                if not ref:
                    values = np.array([])
                elif eval_set == "Avg." and table.get("average"):
                    values = average_values(summary, ref, default_base, eval_sets)
                else:
                    values = cell_values(summary, ref, default_base, eval_set, metric)
                if not len(values):
                    rec[head] = MISSING
                elif metric.endswith("_p"):  # a p-value: scientific notation, never scaled
                    rec[head] = fmt_mean_std(values, 2, "e")
                else:
                    rec[head] = fmt_mean_std(values * scale, decimals)
                theirs = paper[g][e] if g < len(paper) and paper[g] and e < len(paper[g]) else None
                rec[f"{head} ({paper_label})"] = theirs or MISSING
        records.append(rec)
    df = pd.DataFrame(records)
    if table.get("transpose"):
        df = df.set_index("row").T.reset_index().rename(columns={"index": "row"})
    return df


def figure_points(summary: pd.DataFrame, figure: dict[str, Any], default_base: str) -> pd.DataFrame:
    """Per point: mean alignment and uniformity on the figure's eval set over seeds, and the
    score each point is labelled with: ``score_metric`` (default Spearman) of ``score_eval_set``
    (default the same set; the healthcare-LM paper's Figure 6: the frozen F1 of the task)."""
    score_set = figure.get("score_eval_set") or figure["eval_set"]
    score = figure.get("score_metric") or "spearman"
    rows = []
    for p in figure["points"]:
        vals = {
            m: cell_values(summary, p["run"], default_base, figure["eval_set"], m) for m in ("alignment", "uniformity")
        }
        vals[score] = cell_values(summary, p["run"], default_base, score_set, score)
        if all(len(v) for v in vals.values()):
            rows.append(
                {
                    "label": p["label"],
                    "run": p["run"],
                    "seeds": len(vals[score]),
                    **{m: float(np.mean(v)) for m, v in vals.items()},
                }
            )
    return pd.DataFrame(rows, columns=["label", "run", "seeds", "alignment", "uniformity", score])


def alignment_uniformity_figure(points: pd.DataFrame, caption: str, out_paths: list[Any]) -> None:
    """Figure 2: uniformity (x) against alignment (y), each point labelled with its Spearman."""
    from clinsent.report.figures import pyplot, save_figure

    plt = pyplot()

    fig, ax = plt.subplots(figsize=(5.5, 5.2))
    cmap = plt.get_cmap("tab10")
    score = points.columns[-1]  # the metric each point is labelled with (Spearman, or F1)
    for i, r in enumerate(points.to_dict("records")):  # labelled through the legend: close points never overlap
        ax.scatter(r["uniformity"], r["alignment"], color=cmap(i % 10), s=40, label=f"{r['label']} ({r[score]:.3f})")
        ax.annotate(
            str(i + 1), (r["uniformity"], r["alignment"]), textcoords="offset points", xytext=(4, 4), fontsize=7
        )
    ax.legend(
        [f"{i + 1}. {t.get_text()}" for i, t in enumerate(ax.legend().get_texts())],
        fontsize=7,
        loc="upper center",
        bbox_to_anchor=(0.5, -0.15),
        ncol=1,
        frameon=False,
    )
    ax.set_xlabel("uniformity (lower is better)")
    ax.set_ylabel("alignment (lower is better)")
    ax.grid(alpha=0.3)
    ax.set_title(caption, fontsize=9, wrap=True)
    save_figure(fig, out_paths)
