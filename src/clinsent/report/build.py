"""Assemble the report outputs from the per-job metrics, selections and curves."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from clinsent.io import atomic_path, write_csv, write_text
from clinsent.report.figures import curve_figure
from clinsent.report.summary import summary_rows
from clinsent.report.tables import results_table, to_latex, to_markdown


def build_report(jobs: list[dict[str, Any]], eval_sets: list[str], methods: list[str], metric_paths: list[str],
                 selection_paths: list[str], curve_paths: list[str], outputs: dict[str, str], title: str) -> pd.DataFrame:
    """``metric_paths`` are ordered job-major, eval set-minor, as the report rule lists them."""
    if len(metric_paths) != len(jobs) * len(eval_sets) or len(selection_paths) != len(jobs):
        raise ValueError("report inputs do not match the job grid")
    records = []
    curves = []
    for j, job in enumerate(jobs):
        selection = json.loads(Path(selection_paths[j]).read_text())
        for e, name in enumerate(eval_sets):
            metrics = json.loads(Path(metric_paths[j * len(eval_sets) + e]).read_text())
            records.append({**job, "eval_set": name, "step": selection["selected_step"], "metrics": metrics})
        curve = pd.read_csv(curve_paths[j])
        curves.append(curve.assign(method=job["method"], base_model=job["base_model"], seed=job["seed"]))
    summary = summary_rows(records)
    write_csv(summary, outputs["summary"])
    table = results_table(summary, eval_sets, methods)
    write_csv(table, outputs["table_csv"])
    write_text(to_markdown(table, title), outputs["table_md"])
    write_text(to_latex(table, title), outputs["table_tex"])
    all_curves = pd.concat(curves, ignore_index=True)
    with atomic_path(outputs["figure_png"], ".png") as png, atomic_path(outputs["figure_pdf"], ".pdf") as pdf:
        curve_figure(all_curves, eval_sets, [png, pdf], title)
    return summary
