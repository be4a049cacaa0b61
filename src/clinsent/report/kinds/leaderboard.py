"""Leaderboard tables (the benchmark, ``config/benchmark.yaml``): a row per model, a column per
task with its headline metric (mean ± std over seeds), the paper's published figure beside a
task where one is given, the mean over tasks and the mean rank; the best of each column in bold
(Markdown ``**``, LaTeX ``\\textbf``).

Ranks: per task, the models with a score are ranked 1 (best) to n, ties sharing the average of
their ranks (scipy's ``rankdata``, method ``average``, on the negated scores: every headline of
the registered tasks is higher-is-better); a model's mean rank is over the tasks it has. The mean
over tasks is given only for a model scored on every task (else it would compare different
tasks). Rows are sorted by mean rank, then by label. :mod:`clinsent.report.kinds.heatmap` draws
the same scores."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import pandas as pd

from clinsent.config.declare import knob
from clinsent.report.cells import MISSING, cell_values
from clinsent.report.kinds.base import TABLE_KINDS, ReportContext, TableKind, eval_set_names, item_runs
from clinsent.report.tables import fmt_mean_std
from clinsent.run_ref import split_run

if TYPE_CHECKING:
    from clinsent.report.paired import Paired


MEAN, RANK = "Mean", "Mean rank"


@dataclass(frozen=True)
class LeaderboardModel:
    label: str = knob("", "its row label", required=True)
    run: str = knob("", "method or method@base_model", required=True)
    paper: dict[str, str | float | None] | None = knob(None, "eval set -> the published figure for this model")


@dataclass(frozen=True)
class LeaderboardKnobs:
    eval_sets: tuple[str, ...] = knob(
        (),
        "the tasks (columns), in order; may name finetune entries (a config with models: fills in "
        "benchmark.tasks where left out)",
        required=True,
        minItems=1,
    )
    metrics: dict[str, str] | None = knob(None, "eval set -> the metric shown instead of its headline")
    models: tuple[LeaderboardModel, ...] = knob(
        (), "a row per model (a config with models: fills in one per model where left out)", required=True, minItems=1
    )


class ModelsEntry:
    """What a leaderboard table and a heatmap share: their keys, and the runs and eval sets they cite."""

    section: ClassVar[str]

    def runs(self, key: str, entry: Mapping[str, Any]) -> list[tuple[str, str]]:
        return item_runs(self.section, key, entry, "models")

    def names(self, key: str, entry: Mapping[str, Any]) -> list[tuple[str, str, str]]:
        return eval_set_names(f"{self.section}.{key}.eval_sets", *entry["eval_sets"], *(entry.get("metrics") or {}))


@TABLE_KINDS.register("leaderboard", settings=LeaderboardKnobs)
class LeaderboardTable(ModelsEntry, TableKind):
    def caption(self, entry: Mapping[str, Any], paper_label: str) -> str:
        return (
            f"{entry['caption']} Each task's headline metric, mean ± std over seeds; Mean: over every task; "
            f"Mean rank: over the tasks a model has (1 is best); bold: the best of each column, for a task "
            f"with bootstrap intervals only where a paired bootstrap over its items (95%) tells it from every "
            f"other model; ≈: the best and the models it is not told apart from; ?: a model the best could "
            f"not be tested against (the paired test is undefined on these items, e.g. one pair or constant "
            f"gold scores); "
            f"({paper_label}): the published figure."
        )

    def table(self, key: str, entry: Mapping[str, Any], ctx: ReportContext) -> pd.DataFrame:
        return leaderboard_table(ctx.summary, entry, ctx.eval_sets, ctx.default_base, ctx.paper_label, ctx.paired)


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
    from are marked ``≈`` (ties) and none is bold; a model the best cannot be tested against (the
    paired test is undefined) is marked ``?``, and the best is then not bold either."""
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
            continue
        tied, untested = ties
        if not tied and not untested:
            bold.append((tops[0], col))
        for i in [tops[0], *tied] if tied else []:
            table.at[i, col] = f"{table.at[i, col]} ≈"
        for i in untested:  # never shown as a tie, nor as beaten
            table.at[i, col] = f"{table.at[i, col]} ?"
    table.attrs["bold"] = bold
    return table


def _ties(
    df: pd.DataFrame, task: str, metric: str | None, best: int, paired: Paired | None, default_base: str
) -> tuple[list[int], list[int]] | None:
    """The rows the best of ``task`` is not told apart from by a paired bootstrap, and the rows it
    could not be tested against (a paired test that cannot be computed: one pair, constant gold
    scores); None: the task has no replicates at all."""
    if paired is None or metric is None:
        return None
    run = split_run(str(df.at[best, "run"]), default_base)
    if paired.replicates(run, task, metric) is None:
        return None
    others = [int(i) for i in df.index if i != best and not np.isnan(df.at[i, task])]
    verdicts = {i: paired.better(run, split_run(str(df.at[i, "run"]), default_base), task, metric) for i in others}
    return [i for i, v in verdicts.items() if v is False], [i for i, v in verdicts.items() if v is None]
