"""Assemble the report outputs from the per-job metrics, selections and curves."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from clinsent.finetune.config import CROSS_ENCODER
from clinsent.io.files import atomic_path, write_csv, write_parquet, write_text
from clinsent.report import what_ran
from clinsent.report.captions import RunFacts, results_caption
from clinsent.report.figures import curve_figure
from clinsent.report.paired import Paired, replicate_rows, with_differences
from clinsent.report.spread import check, paired_rows
from clinsent.report.summary import summary_rows
from clinsent.report.tables import results_cells, results_table, to_latex, to_markdown

if TYPE_CHECKING:
    from clinsent.report.kinds.base import ReportContext, TableKind

log = logging.getLogger("clinsent.report")
NO_CURVES = (
    "No training-curve figure: no run evaluates a curve set (set `selection_set`, or `curve: true` "
    "on an eval set, to have one)."
)


def build_report(
    jobs: list[dict[str, Any]],
    evaluations: list[dict[str, Any]],
    eval_sets: dict[str, dict[str, Any]],
    methods: list[str],
    metric_paths: list[str],
    selection_paths: list[str],
    curve_paths: list[str],
    outputs: dict[str, str],
    title: str,
    facts: RunFacts | None = None,
) -> pd.DataFrame:
    """``evaluations``: (method, base_model, seed, eval_set) of each path of ``metric_paths``;
    ``eval_sets``: name -> {"metrics": [...], "headline": ..., "not_differenced": [...], "files":
    [its file names]} (from its task). A fine-tune entry is an eval set here; its result file
    holds the test metrics under ``metrics``. Rows of a method without a train job (the
    cross-encoders) have step 0. ``facts``: what the run did (:mod:`clinsent.report.captions`):
    the reference row of the paired differences and the notes under the table. The steps: read
    the runs' records, the metrics and the curves; write the replicates and summary.csv; the
    results table (csv, tex, md, with its notes: how to read it, what ran
    (:mod:`clinsent.report.what_ran`) and whether its rows can be told apart
    (:mod:`clinsent.report.spread`)) and the curve figure."""
    if len(metric_paths) != len(evaluations) or len(selection_paths) != len(jobs):
        raise ValueError("report inputs do not match the job grid")
    facts = facts or RunFacts(seeds=len({int(j["seed"]) for j in jobs}) or 1)
    runs = _selections(jobs, selection_paths)
    sizes: dict[str, tuple[int, str]] = {}
    records = _records(evaluations, metric_paths, runs, sizes)
    replicates = replicate_rows(records)
    write_parquet(replicates, outputs["replicates"])
    paired = Paired(replicates)
    summary = with_differences(
        summary_rows(records, {name: e["metrics"] for name, e in eval_sets.items()}),
        paired,
        facts.reference,
        {name: e.get("not_differenced", ()) for name, e in eval_sets.items()},
    )
    write_csv(summary, outputs["summary"])
    headlines = {name: e["headline"] for name, e in eval_sets.items()}
    table = results_table(summary, headlines, methods, paired, facts.reference)
    biased = set(facts.selected_on_reported)
    table.columns = [f"{c} †" if c.split(" (")[0] in biased and " Δ vs " not in c else c for c in table.columns]
    spread = check(*results_cells(summary, headlines), paired=paired_rows(paired, headlines))
    spread.log(log, "tables/results")
    write_csv(table, outputs["table_csv"])
    trained = [t for t in runs.trained if t.method in facts.selection]
    untrained = [m for m in methods if m not in facts.selection]
    files = {name: list(e.get("files", [])) for name, e in eval_sets.items()}
    ran = what_ran.note(trained, untrained, files, sizes)
    notes = results_caption(facts, runs.lengths) + ("" if "figure_png" in outputs else f" {NO_CURVES}")
    notes += f" {ran} {spread.sentence()}"
    write_text(to_latex(table, f"{title.rstrip('.')}. {notes}"), outputs["table_tex"])  # the note as results.md's
    if "figure_png" in outputs:
        with atomic_path(outputs["figure_png"], ".png") as png, atomic_path(outputs["figure_pdf"], ".pdf") as pdf:
            curve_figure(_curves(jobs, curve_paths, runs), [png, pdf], title)
    else:
        log.info("%s", NO_CURVES)
    write_text(to_markdown(table, title) + f"\n{notes}\n", outputs["table_md"])
    return summary


@dataclass
class _Selections:
    """What each run's record says: its selected step, the set it was selected on, and each base
    model's evaluation length."""

    step: dict[tuple[str, str, int], int] = field(default_factory=dict)
    selected_on: dict[tuple[str, str, int], str | None] = field(default_factory=dict)
    lengths: dict[str, int] = field(default_factory=dict)
    trained: list[what_ran.Trained] = field(default_factory=list)  # each run's steps, batch and data drawn


def _selections(jobs: list[dict[str, Any]], selection_paths: list[str]) -> _Selections:
    out = _Selections()
    for job, path in zip(jobs, selection_paths, strict=True):
        info = json.loads(Path(path).read_text())
        key = (job["method"], job["base_model"], job["seed"])
        out.step[key] = info["selected_step"]
        out.selected_on[key] = info.get("selection_set")
        if info.get("eval_max_length"):  # records from before the evaluation length have none
            out.lengths.setdefault(job["base_model"], int(info["eval_max_length"]))
        out.trained.append(what_ran.Trained.from_record(job["method"], job["base_model"], info))
    return out


def _records(
    evaluations: list[dict[str, Any]], metric_paths: list[str], runs: _Selections, sizes: dict[str, tuple[int, str]]
) -> list[dict[str, Any]]:
    """One record per evaluation: the run, the eval set, the selected step and the metrics;
    ``sizes`` gets each eval set's item count and unit, as its metric files state them."""
    records = []
    for ev, path in zip(evaluations, metric_paths, strict=True):
        job = {k: ev[k] for k in ("method", "base_model", "seed")}
        metrics = json.loads(Path(path).read_text())
        some = ev["method"] == CROSS_ENCODER  # pair scores: the STS metrics of embeddings are absent
        if isinstance(metrics.get("metrics"), dict):  # a fine-tune job's result
            metrics = metrics["metrics"]
        items = (metrics.get("ci_method") or {}).get("items")
        if isinstance(items, int):
            sizes.setdefault(ev["eval_set"], (items, str(metrics["ci_method"].get("unit") or "items")))
        step = runs.step.get((job["method"], job["base_model"], job["seed"]), 0)
        records.append({**job, "eval_set": ev["eval_set"], "step": step, "metrics": metrics, "some_metrics": some})
    return records


def _curves(jobs: list[dict[str, Any]], curve_paths: list[str], runs: _Selections) -> pd.DataFrame:
    """Every run's curve, marked with its run and its selected step (a star only where a step was
    selected: with no selection set the last step is kept, unmarked)."""
    curves = []
    for job, path in zip(jobs, curve_paths, strict=True):
        key = (job["method"], job["base_model"], job["seed"])
        curves.append(
            pd.read_csv(path).assign(
                method=job["method"],
                base_model=job["base_model"],
                seed=job["seed"],
                selected_step=runs.step[key] if runs.selected_on[key] else np.nan,
            )
        )
    return pd.concat(curves, ignore_index=True)


def build_paper_report(
    summary_path: str,
    jobs: list[dict[str, Any]],
    curve_paths: list[str],
    tables: dict[str, dict[str, Any]],
    figures: dict[str, dict[str, Any]],
    eval_sets: dict[str, str],
    default_base: str,
    paper_label: str,
    out_dir_tables: str,
    out_dir_figures: str,
    extras: dict[str, dict[str, dict[str, Any]]] | None = None,
    curve_tables: list[str] | None = None,
    replicates_path: str | None = None,
    facts: RunFacts | None = None,
) -> None:
    """Each table as md/csv/tex (a table whose kind draws curves also with its training-curve
    figure); each figure as png/pdf plus its points (csv); each built by its kind
    (:mod:`clinsent.report.kinds`). ``eval_sets``: name -> the headline metric of its task.
    ``extras``: tables/figures -> id -> ``inputs`` and ``params`` of its kind (the plan's
    :meth:`clinsent.plan.Plan.kind_extras`); none for kinds that read only the summary."""
    from clinsent.report.kinds.base import ReportContext, figure_kind, table_kind

    extras = extras or {}
    summary = pd.read_csv(summary_path)
    paired = Paired(pd.read_parquet(replicates_path)) if replicates_path else None
    curves = _report_curves(summary, jobs, curve_paths, facts)
    seeds = facts.seeds if facts is not None else None
    over = "one seed" if seeds == 1 else f"mean over {seeds} seeds" if seeds else "mean over seeds"

    def context(section: str, key: str) -> ReportContext:
        extra = (extras.get(section) or {}).get(key) or {}
        inputs, params = extra.get("inputs") or {}, extra.get("params") or {}
        return ReportContext(summary, curves, eval_sets, default_base, paper_label, inputs, params, paired)

    for tid, table in tables.items():
        kind = table_kind(tid, table)
        _write_table(kind, tid, table, context("tables", tid), paper_label, out_dir_tables)
        if kind.curves and (curve_tables is None or tid in curve_tables):  # its runs evaluate a curve set
            _write_curves(kind, tid, table, curves, default_base, f"{out_dir_figures}/curves_{tid}", over)
    for fid, figure in figures.items():
        fkind = figure_kind(fid, figure)
        ctx = context("figures", fid)
        points = fkind.points(fid, figure, ctx)
        write_csv(points, f"{out_dir_figures}/{fid}.csv")
        with (
            atomic_path(f"{out_dir_figures}/{fid}.png", ".png") as png,
            atomic_path(f"{out_dir_figures}/{fid}.pdf", ".pdf") as pdf,
        ):
            fkind.draw(points, fid, figure, ctx, [png, pdf])


def _report_curves(
    summary: pd.DataFrame, jobs: list[dict[str, Any]], curve_paths: list[str], facts: RunFacts | None
) -> pd.DataFrame:
    """Every run's training curve, each row marked with the step its run's model is from where a
    step was selected (else the last step, unmarked)."""
    curves = pd.concat(
        [
            pd.read_csv(p).assign(method=j["method"], base_model=j["base_model"], seed=j["seed"])
            for j, p in zip(jobs, curve_paths, strict=True)
        ],
        ignore_index=True,
    )
    chosen = summary.groupby(["method", "base_model", "seed"])["step"].first()
    selects = (lambda m: bool(facts.selection.get(m))) if facts is not None else (lambda m: True)
    curves["selected_step"] = [
        chosen.get((m, b, s), np.nan) if selects(m) else np.nan
        for m, b, s in zip(curves["method"], curves["base_model"], curves["seed"], strict=True)
    ]
    return curves


def _write_table(
    kind: TableKind, tid: str, table: dict[str, Any], ctx: ReportContext, paper_label: str, out_dir: str
) -> None:
    """One table by its kind, as csv, markdown and LaTeX; its seed spread logged and written under
    it (the markdown's last line, the LaTeX caption's last sentence)."""
    df = kind.table(tid, table, ctx)
    caption = kind.caption(table, paper_label)
    spread = kind.spread(tid, table, ctx)
    below = ""
    if spread is not None:
        spread.log(log, f"tables.{tid}")
        below = spread.sentence()
    write_csv(df, f"{out_dir}/{tid}.csv")
    write_text(to_markdown(df, caption) + (f"\n{below}\n" if below else ""), f"{out_dir}/{tid}.md")
    write_text(to_latex(df, f"{caption} {below}".strip()), f"{out_dir}/{tid}.tex")


def _write_curves(
    kind: TableKind, tid: str, table: dict[str, Any], curves: pd.DataFrame, default_base: str, stem: str, over: str
) -> None:
    """A table's training-curve figure (png and pdf): the curves of the runs it cites."""
    from clinsent.run_ref import split_run

    runs = {split_run(c, default_base) for _, c in kind.runs(tid, table)}
    sub = curves[[(m, b) in runs for m, b in zip(curves["method"], curves["base_model"], strict=True)]]
    with atomic_path(f"{stem}.png", ".png") as png, atomic_path(f"{stem}.pdf", ".pdf") as pdf:
        curve_figure(sub, [png, pdf], f"{tid}: score against training step ({over})")
