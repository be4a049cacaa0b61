"""The benchmark's leaderboard: models x tasks, each task's headline metric (mean over seeds),
the mean over tasks and the mean rank, the best of each column marked; and its heatmap.

Ranks: per task, the models with a score are ranked 1 (best) to n, ties sharing the average of
their ranks (scipy's ``rankdata``, method ``average``, on the negated scores: every headline of
the registered tasks is higher-is-better); a model's mean rank is over the tasks it has. The mean
over tasks is given only for a model scored on every task (else it would compare different
tasks). Rows are sorted by mean rank, then by label."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from clinsent.experiments import split_run
from clinsent.report.paper import MISSING, cell_values
from clinsent.report.tables import fmt_mean_std

if TYPE_CHECKING:
    from clinsent.report.paired import Paired

MEAN, RANK = "Mean", "Mean rank"


def scores(
    summary: pd.DataFrame, entry: Mapping[str, Any], headlines: Mapping[str, str], default_base: str
) -> pd.DataFrame:
    """One row per model of ``entry['models']``: label, run, seeds, then per task its mean over
    seeds (``<task>``), sample std (``<task> std``) and rank (``<task> rank``), the mean over tasks
    and the mean rank."""
    tasks = list(entry["eval_sets"])
    metrics = {t: (entry.get("metrics") or {}).get(t) or headlines[t] for t in tasks}
    rows = []
    for model in entry["models"]:
        row: dict[str, Any] = {"label": model["label"], "run": model["run"], "seeds": 0}
        for task in tasks:
            values = cell_values(summary, model["run"], default_base, task, metrics[task])
            row[task] = float(values.mean()) if len(values) else np.nan
            row[f"{task} std"] = float(values.std(ddof=1)) if len(values) > 1 else np.nan
            row["seeds"] = max(row["seeds"], len(values))
        rows.append(row)
    df = pd.DataFrame(rows, columns=["label", "run", "seeds", *(c for t in tasks for c in (t, f"{t} std"))])
    df[MEAN] = df[tasks].mean(axis=1, skipna=False) if tasks else np.nan
    ranks = task_ranks(df[tasks])
    for task in tasks:
        df[f"{task} rank"] = ranks[task]
    df[RANK] = ranks.mean(axis=1, skipna=True)
    return df.sort_values([RANK, "label"], na_position="last", kind="stable").reset_index(drop=True)


def task_ranks(table: pd.DataFrame) -> pd.DataFrame:
    """Per column, the rank of each row's score among those with one (1: highest; ties: average)."""
    from scipy.stats import rankdata

    out = pd.DataFrame(np.nan, index=table.index, columns=table.columns)
    for col in table.columns:
        have = table[col].notna()
        if have.any():
            out.loc[have, col] = rankdata(-table.loc[have, col].to_numpy(), method="average")
    return out


def leaderboard_table(
    summary: pd.DataFrame,
    entry: Mapping[str, Any],
    headlines: Mapping[str, str],
    default_base: str,
    paper_label: str,
    paired: Paired | None = None,
) -> pd.DataFrame:
    """The table as shown: model, each task (mean ± std), the paper's figure beside a task where
    any model has one, Mean, Mean rank; ``attrs['bold']``: the (row, column) of each column's best.
    A task whose runs have bootstrap replicates (``paired``) bolds its best only where a paired
    bootstrap tells it from every other model; else the best and the models it is not told apart
    from are marked ``≈`` (ties) and none is bold."""
    df = scores(summary, entry, headlines, default_base)
    tasks = list(entry["eval_sets"])
    papers = {m["label"]: m.get("paper") or {} for m in entry["models"]}
    with_paper = [t for t in tasks if any(t in p for p in papers.values())]
    records = []
    for _, row in df.iterrows():
        rec: dict[str, str] = {"model": row["label"]}
        for task in tasks:
            if np.isnan(row[task]):
                rec[task] = MISSING
            else:
                rec[task] = (
                    fmt_mean_std(np.array([row[task]]))
                    if np.isnan(row[f"{task} std"])
                    else f"{row[task]:.3f} ± {row[f'{task} std']:.3f}"
                )
            if task in with_paper:
                rec[f"{task} ({paper_label})"] = str(papers[row["label"]].get(task) or MISSING)
        rec[MEAN] = MISSING if np.isnan(row[MEAN]) else f"{row[MEAN]:.3f}"
        rec[RANK] = MISSING if np.isnan(row[RANK]) else f"{row[RANK]:.2f}"
        records.append(rec)
    table = pd.DataFrame(
        records,
        columns=[
            "model",
            *(c for t in tasks for c in ([t, f"{t} ({paper_label})"] if t in with_paper else [t])),
            MEAN,
            RANK,
        ],
    )
    bold = []
    metrics = {t: (entry.get("metrics") or {}).get(t) or headlines[t] for t in tasks}
    for col, best in [*((t, "max") for t in tasks), (MEAN, "max"), (RANK, "min")]:
        values = df[col]
        if not values.notna().any():
            continue
        target = values.max() if best == "max" else values.min()
        tops = [int(i) for i in df.index[np.isclose(values, target) & values.notna()]]
        ties = _ties(df, col, metrics.get(col), tops[0], paired, default_base) if col in tasks else None
        if ties is None:  # no replicates (or Mean, Mean rank): the best as it stands
            bold += [(i, col) for i in tops]
        elif not ties:
            bold.append((tops[0], col))
        else:
            for i in [tops[0], *ties]:
                table.at[i, col] = f"{table.at[i, col]} ≈"
    table.attrs["bold"] = bold
    return table


def _ties(
    df: pd.DataFrame, task: str, metric: str | None, best: int, paired: Paired | None, default_base: str
) -> list[int] | None:
    """The rows the best of ``task`` is not told apart from by a paired bootstrap (None: untested)."""
    if paired is None or metric is None:
        return None
    run = split_run(str(df.at[best, "run"]), default_base)
    if paired.replicates(run, task, metric) is None:
        return None
    others = [int(i) for i in df.index if i != best and not np.isnan(df.at[i, task])]
    return [
        i
        for i in others
        if paired.better(run, split_run(str(df.at[i, "run"]), default_base), task, metric) is not True
    ]


def heatmap_points(
    summary: pd.DataFrame, entry: Mapping[str, Any], headlines: Mapping[str, str], default_base: str
) -> pd.DataFrame:
    """Long form of the scores (model, task, score, rank), models in mean-rank order."""
    df = scores(summary, entry, headlines, default_base)
    rows = [
        {
            "model": r["label"],
            "run": r["run"],
            "order": i,
            "mean_rank": r[RANK],
            "task": t,
            "score": r[t],
            "rank": r[f"{t} rank"],
        }
        for i, r in df.iterrows()
        for t in entry["eval_sets"]
    ]
    return pd.DataFrame(rows, columns=["model", "run", "order", "mean_rank", "task", "score", "rank"])


def heatmap_figure(points: pd.DataFrame, caption: str, out_paths: list[Any]) -> None:
    """Models (rows, best mean rank on top) x tasks, each cell coloured and labelled with its score."""
    from clinsent.report.figures import pyplot, save_figure

    plt = pyplot()
    models = list(dict.fromkeys(points.sort_values("order")["model"]))
    tasks = list(dict.fromkeys(points["task"]))
    grid = points.pivot(index="model", columns="task", values="score").reindex(index=models, columns=tasks)
    fig, ax = plt.subplots(figsize=(1.2 + 1.1 * max(len(tasks), 1), 1.0 + 0.45 * max(len(models), 1)))
    image = ax.imshow(np.ma.masked_invalid(grid.to_numpy(dtype=float)), cmap="viridis", aspect="auto")
    for i in range(len(models)):
        for j in range(len(tasks)):
            value = grid.iat[i, j]
            ax.text(
                j,
                i,
                MISSING if np.isnan(value) else f"{value:.3f}",
                ha="center",
                va="center",
                fontsize=7,
                color="white" if not np.isnan(value) and value < np.nanmean(grid.to_numpy(dtype=float)) else "black",
            )
    ax.set_xticks(range(len(tasks)), tasks, rotation=30, ha="right", fontsize=8)
    ax.set_yticks(range(len(models)), models, fontsize=8)
    fig.colorbar(image, ax=ax, fraction=0.04)
    ax.set_title(caption, fontsize=9, wrap=True)
    save_figure(fig, out_paths)
