"""Paper tables and figures from a summary: cells, the paper's numbers beside ours, transpose,
averages, and the other kinds of table (augmentation examples, retrieval, the fraction figure)."""

from __future__ import annotations

import copy
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from clinsent.config.sections import RunConfig
from clinsent.errors import InputError
from clinsent.methods.config import resolve_methods
from clinsent.report.build import build_paper_report
from clinsent.report.kinds.alignment_uniformity import figure_points
from clinsent.report.kinds.augmentations import augmentation_table
from clinsent.report.kinds.fraction import fraction_points
from clinsent.report.kinds.retrieval_examples import retrieval_table
from clinsent.report.kinds.runs import paper_table
from clinsent.report.summary import SUMMARY_COLUMNS

HEADLINE = {"train": "spearman", "test": "spearman"}


def _summary() -> pd.DataFrame:
    rows = []
    for method, base, vals in [("simcse", "bio", [0.70, 0.72]), ("medse", "bio", [0.74, 0.76]), ("lm", "bert", [0.6])]:
        for seed, v in enumerate(vals):
            for e, name in enumerate(["train", "test"]):
                for metric, value in [
                    ("spearman", v - 0.1 * e),
                    ("alignment", 0.3 + seed),
                    ("uniformity", -2.0 - seed),
                ]:
                    rows.append((method, base, seed, name, metric, value, 10))
    return pd.DataFrame(rows, columns=SUMMARY_COLUMNS[:7])  # a summary without intervals (their columns stay off)


TABLE = {
    "caption": "T",
    "columns": ["MED-SE", "SimCSE"],
    "rows": [
        {"label": "Replace", "cells": ["medse", "simcse"], "paper": [["0.721 ± 0.008", "0.687"], ["0.685", "0.560"]]},
        {"label": "Baseline", "cells": [None, "lm@bert"]},
    ],
}


def test_cells_are_mean_std_over_seeds_with_the_paper_beside() -> None:
    df = paper_table(_summary(), TABLE, HEADLINE, default_base="bio")
    assert list(df.columns) == [
        "row",
        "train MED-SE",
        "train MED-SE (paper)",
        "train SimCSE",
        "train SimCSE (paper)",
        "test MED-SE",
        "test MED-SE (paper)",
        "test SimCSE",
        "test SimCSE (paper)",
    ]
    replace = df.iloc[0]
    std = np.std([0.74, 0.76], ddof=1)
    assert replace["train MED-SE"] == f"0.750 ± {std:.3f}" and replace["test MED-SE"] == f"0.650 ± {std:.3f}"
    assert replace["train MED-SE (paper)"] == "0.721 ± 0.008" and replace["test SimCSE (paper)"] == "0.560"
    baseline = df.iloc[1]
    assert (
        baseline["train MED-SE"] == "–"
        and baseline["train SimCSE"] == "0.600"
        and baseline["test SimCSE (paper)"] == "–"
    )


def test_a_row_with_the_wrong_number_of_cells_names_the_row() -> None:
    bad = {**TABLE, "rows": [*TABLE["rows"], {"label": "Short", "cells": ["medse"]}]}
    with pytest.raises(
        InputError,
        match=r"^config: tables, row 2 \(Short\): 1 cells for 2 column groups .*"
        r"Fix: give the row one cell per column group",
    ):
        paper_table(_summary(), bad, HEADLINE, default_base="bio")


def test_transpose_puts_rows_across() -> None:
    table = {
        "caption": "T6",
        "transpose": True,
        "rows": [
            {"label": "0.1", "cells": ["medse"], "paper": [["0.721", "0.687"]]},
            {"label": "0.5", "cells": ["simcse"], "paper": [["0.717", "0.675"]]},
        ],
    }
    df = paper_table(_summary(), table, HEADLINE, default_base="bio")
    assert list(df.columns) == ["row", "0.1", "0.5"]
    assert df["row"].tolist() == ["train", "train (paper)", "test", "test (paper)"]
    assert df.loc[0, "0.1"].startswith("0.750") and df.loc[1, "0.5"] == "0.717"


def test_figure_points_and_files(tmp_path: Path) -> None:
    figure = {
        "caption": "F2",
        "eval_set": "test",
        "points": [{"label": "MED-SE", "run": "medse"}, {"label": "BERT", "run": "lm@bert"}],
    }
    pts = figure_points(_summary(), figure, "bio")
    assert pts["label"].tolist() == ["MED-SE", "BERT"]
    assert np.isclose(pts.loc[0, "spearman"], 0.65) and np.isclose(pts.loc[0, "alignment"], 0.8)
    assert pts.loc[1, "seeds"] == 1 and np.isclose(pts.loc[1, "uniformity"], -2.0)
    summary_path = tmp_path / "summary.csv"
    _summary().to_csv(summary_path, index=False)
    jobs, curves = [], []
    for m, b, s in [("simcse", "bio", 0), ("medse", "bio", 0), ("lm", "bert", 0)]:
        p = tmp_path / f"{m}{s}.csv"
        pd.DataFrame(
            {
                "step": [0, 10, 0, 10],
                "eval_set": ["train", "train", "test", "test"],
                "metric": "spearman",
                "score": [0.5, 0.7, 0.4, 0.6],
            }
        ).to_csv(p, index=False)
        jobs.append({"method": m, "base_model": b, "seed": s})
        curves.append(str(p))
    build_paper_report(
        str(summary_path),
        jobs,
        curves,
        {"table7": TABLE},
        {"figure2": figure},
        HEADLINE,
        "bio",
        "paper",
        str(tmp_path / "tables"),
        str(tmp_path / "figures"),
    )
    for name in [
        "tables/table7.md",
        "tables/table7.csv",
        "tables/table7.tex",
        "figures/curves_table7.png",
        "figures/curves_table7.pdf",
        "figures/figure2.png",
        "figures/figure2.pdf",
        "figures/figure2.csv",
    ]:
        assert (tmp_path / name).stat().st_size > 0, name
    md = (tmp_path / "tables/table7.md").read_text()
    assert "(paper)" in md and "0.721 ± 0.008" in md and "mean ± std over seeds" in md


def test_average_and_percent_columns() -> None:
    table = {
        "caption": "T4",
        "eval_sets": ["test", "train"],
        "average": True,
        "percent": True,
        "rows": [{"label": "MED-SE", "cells": ["medse"], "paper": [["1", "2", "3"]]}],
    }
    df = paper_table(_summary(), table, HEADLINE, default_base="bio")
    assert list(df.columns) == ["row", "test", "test (paper)", "train", "train (paper)", "Avg.", "Avg. (paper)"]
    per_seed = np.array([(0.64 + 0.74) / 2, (0.66 + 0.76) / 2]) * 100  # the mean over sets per seed, then over seeds
    assert df.loc[0, "Avg."] == f"{per_seed.mean():.2f} ± {per_seed.std(ddof=1):.2f}"
    assert (
        df.loc[0, "test"] == f"65.00 ± {100 * np.std([0.64, 0.66], ddof=1):.2f}" and df.loc[0, "Avg. (paper)"] == "3"
    )


def test_other_kinds_of_table() -> None:
    entries = resolve_methods(
        RunConfig.parse(
            {
                "methods": {
                    "rc": {"objective": "simcse", "augmentation": "random_crop", "augmentation_rate": 0.3},
                    "plain": {"objective": "simcse"},
                }
            }
        )
    )
    table = {
        "sentence": "one two three four five six seven eight nine ten",
        "seed": 0,
        "rows": [{"label": "RC", "method": "rc"}, {"label": "SimCSE", "method": "plain"}],
    }
    df = augmentation_table(table, {m: e.method for m, e in entries.items()})
    assert df["method"].tolist() == ["None", "RC", "SimCSE"]
    assert df.loc[1, "text"].split().count("[MASK]") == 3  # round(0.3 x 10) words cropped
    assert df.loc[2, "text"].endswith("(same text)")  # dropout: the view is the same text
    texts = ["q", "near", "far", "mid"]
    vecs = np.array([[1.0, 0.0], [0.9, 0.1], [-1.0, 0.0], [0.5, 0.5]])
    out = retrieval_table(
        {"eval_set": "s", "queries": ["q"], "runs": ["a"], "k": 2, "labels": {"a": "A"}}, {"a": (texts, vecs)}
    )
    assert out["A"].str.split(" ").str[0].tolist() == ["near", "mid"] and out["query"].tolist() == ["q", ""]
    with pytest.raises(InputError, match="query 0 is not a text of eval set s"):
        retrieval_table({"eval_set": "s", "queries": ["not there"], "runs": ["a"]}, {"a": (texts, vecs)})
    fig = {
        "eval_sets": ["test"],
        "series": [{"label": "S", "points": [{"x": 0.5, "run": "simcse"}, {"x": 1.0, "run": "medse"}]}],
    }
    pts = fraction_points(_summary(), fig, HEADLINE, "bio")
    assert pts["fraction"].tolist() == [0.5, 1.0] and np.allclose(pts["mean"], [0.61, 0.65])


def test_curve_figure_marks_each_runs_selected_step(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A star on each curve at the step(s) whose model was saved (one per seed), at the mean
    score of that step; the untrained baseline (one step) has none."""
    from clinsent.report import figures

    drawn: list = []
    monkeypatch.setattr(figures, "save_figure", lambda fig, paths: drawn.append(fig))
    rows = []
    for seed, chosen in ((0, 4), (1, 6)):
        for step, score in ((0, 0.1), (2, 0.3), (4, 0.5 + seed / 10), (6, 0.4 + seed / 5)):
            rows.append(
                {
                    "method": "simcse",
                    "base_model": "b",
                    "seed": seed,
                    "step": step,
                    "eval_set": "sel",
                    "metric": "spearman",
                    "score": score,
                    "selected_step": chosen,
                }
            )
    rows.append(
        {
            "method": "none",
            "base_model": "b",
            "seed": 0,
            "step": 0,
            "eval_set": "sel",
            "metric": "spearman",
            "score": 0.2,
            "selected_step": 0,
        }
    )
    figures.curve_figure(pd.DataFrame(rows), [tmp_path / "c.png"], "t")
    stars = [line for line in drawn[0].axes[0].get_lines() if line.get_marker() == "*"]
    assert len(stars) == 1 and stars[0].get_label() == "selected step"
    assert stars[0].get_xdata().tolist() == [4, 6]
    assert stars[0].get_ydata().tolist() == pytest.approx([0.55, 0.5])  # the mean over seeds at those steps


def test_curve_column_points_are_the_mean_and_std_over_seeds_per_step() -> None:
    """One value per seed and step (a curve repeats the step's statistics on each eval set's row),
    then mean and n - 1 std over the seeds; a run without the column is named with the columns it has."""
    from clinsent.report.kinds.curve_column import curve_column_points

    rows = []
    for seed, shares in ((0, (0.5, 0.2)), (1, (0.7, 0.4))):
        for step, share in zip((10, 20), shares, strict=True):
            for eval_set in ("a", "b"):
                rows.append(
                    {
                        "method": "mix",
                        "base_model": "bert",
                        "seed": seed,
                        "step": step,
                        "eval_set": eval_set,
                        "loss": 1.0,
                        "stat_zero_weight_share": share,
                    }
                )
        rows.append(
            {
                "method": "mix",
                "base_model": "bert",
                "seed": seed,
                "step": 0,
                "eval_set": "a",
                "loss": None,
                "stat_zero_weight_share": None,
            }
        )  # the untrained step logs no statistic
    curves = pd.DataFrame(rows)
    entry = {"column": "stat_zero_weight_share", "lines": [{"label": "IW", "run": "mix"}]}
    pts = curve_column_points(curves, entry, "bert", "f")
    assert pts["step"].tolist() == [10, 20] and pts["seeds"].tolist() == [2, 2]
    assert pts["mean"].tolist() == pytest.approx([0.6, 0.3])
    assert pts["std"].tolist() == pytest.approx([np.std([0.5, 0.7], ddof=1), np.std([0.2, 0.4], ddof=1)])
    with pytest.raises(InputError, match=r"figures\.f\.lines\[0\]\.run.*no stat_other values.*'loss'"):
        curve_column_points(curves, {**entry, "column": "stat_other"}, "bert", "f")


def test_curve_column_checks_the_cited_methods_log_the_statistic() -> None:
    """Checked when the config is read: a stat_ column that the cited method does not log, and a
    cited method that trains nothing, are refused with the line that cites it."""
    from clinsent.door.open import open_config
    from clinsent.plan.checks import build_plan
    from clinsent.plan.jobs import job_counts

    repo = Path(__file__).resolve().parents[2]
    cwd = Path.cwd()
    os.chdir(repo)
    try:
        config = open_config("config/paper/augment-demo.yaml", {"placeholders_ok": True})
        assert job_counts(build_plan(copy.deepcopy(config)))["paper_report"] == 1
        for run, column, message in (
            ("simcse@bert", "stat_zero_weight_share", r"lines\[1\]\.run.*'simcse'.*logs no"),
            ("lm_zh@chinese", "loss", r"lines\[1\]\.run.*trains nothing"),
        ):
            bad = copy.deepcopy(config)
            bad["figures"]["instance_weighting"]["lines"][1]["run"] = run
            bad["figures"]["instance_weighting"]["column"] = column
            with pytest.raises(InputError, match=message):
                build_plan(bad)
    finally:
        os.chdir(cwd)
