"""The benchmark's leaderboard table and heatmap kinds on a small summary: means and sample
stds over seeds, the mean over tasks, mean ranks against scipy's rankdata, the best of each
column in bold in Markdown and LaTeX, and the heatmap's points and files."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import rankdata

from clinsent.report.kinds.base import ReportContext, figure_kind, table_kind
from clinsent.report.kinds.leaderboard import scores
from clinsent.report.tables import to_latex, to_markdown

# model -> task -> per-seed scores; "c" lacks the rqe task
SCORES = {
    "a": {"sts": [0.70, 0.74], "rqe": [0.60, 0.62]},
    "b": {"sts": [0.80, 0.78], "rqe": [0.55, 0.55]},
    "c": {"sts": [0.72, 0.72]},
}
HEADLINES = {"sts": "spearman", "rqe": "accuracy"}
ENTRY = {
    "kind": "leaderboard",
    "caption": "Leaderboard.",
    "eval_sets": ["sts", "rqe"],
    "models": [
        {"label": "A", "run": "as_is@a", "paper": {"sts": "0.701"}},
        {"label": "B", "run": "as_is@b"},
        {"label": "C", "run": "as_is@c"},
    ],
}


def _summary() -> pd.DataFrame:
    rows = [
        {"method": "as_is", "base_model": m, "seed": s, "eval_set": t, "metric": HEADLINES[t], "value": v}
        for m, tasks in SCORES.items()
        for t, values in tasks.items()
        for s, v in enumerate(values)
    ]
    rows.append(
        {"method": "as_is", "base_model": "a", "seed": 0, "eval_set": "sts", "metric": "pearson", "value": 0.1}
    )
    return pd.DataFrame(rows)


def _ctx() -> ReportContext:
    return ReportContext(_summary(), pd.DataFrame(), HEADLINES, "a", "paper")


def test_scores_means_and_ranks_match_an_independent_computation() -> None:
    df = scores(_summary(), ENTRY, HEADLINES, "a").set_index("label")
    for model, tasks in SCORES.items():
        for task, values in tasks.items():
            assert df.loc[model.upper(), task] == pytest.approx(np.mean(values))
            assert df.loc[model.upper(), f"{task} std"] == pytest.approx(np.std(values, ddof=1))
    assert np.isnan(df.loc["C", "rqe"]) and np.isnan(df.loc["C", "Mean"])  # no mean over a missing task
    assert df.loc["A", "Mean"] == pytest.approx((0.72 + 0.61) / 2)
    sts = rankdata([-0.72, -0.79, -0.72], method="average")  # A and C tie on STS
    rqe = rankdata([-0.61, -0.55], method="average")
    assert df.loc["A", "Mean rank"] == pytest.approx((sts[0] + rqe[0]) / 2)
    assert df.loc["B", "Mean rank"] == pytest.approx((sts[1] + rqe[1]) / 2)
    assert df.loc["C", "Mean rank"] == pytest.approx(sts[2])  # over the one task it has
    assert list(df.index) == ["B", "A", "C"]  # by mean rank (1.5, 2.0, 2.5)


def test_the_table_shows_the_paper_beside_ours_and_bolds_each_column_s_best() -> None:
    kind = table_kind("lb", ENTRY)
    df = kind.table("lb", ENTRY, _ctx())
    assert list(df.columns) == ["model", "sts", "sts (paper)", "rqe", "Mean", "Mean rank"]
    rows = df.set_index("model")
    assert rows.loc["A", "sts"] == "0.720 ± 0.028" and rows.loc["A", "sts (paper)"] == "0.701"
    assert rows.loc["B", "sts (paper)"] == "–" and rows.loc["C", "rqe"] == "–" and rows.loc["C", "Mean"] == "–"
    md = to_markdown(df, kind.caption(ENTRY, "paper"))
    assert "| B | **0.790 ± 0.014** | – | 0.550 ± 0.000 | **0.670** | **1.50** |" in md
    assert "| A | 0.720 ± 0.028 | 0.701 | **0.610 ± 0.014** | 0.665 | 1.75 |" in md
    assert "| C | 0.720 ± 0.000 | – | – | – | 2.50 |" in md
    assert md.count("**") == 2 * 4 + 2  # four best cells (STS, RQE, Mean, Mean rank) and the caption
    tex = to_latex(df, "c")
    assert r"\textbf{0.790 $\pm$ 0.014}" in tex and r"\textbf{1.50}" in tex and "**" not in tex


def test_the_heatmap_has_every_model_and_task_in_rank_order(tmp_path: Path) -> None:
    entry = {**ENTRY, "kind": "heatmap", "caption": "Heatmap."}
    kind = figure_kind("hm", entry)
    points = kind.points("hm", entry, _ctx())
    assert len(points) == 3 * 2 and list(dict.fromkeys(points["model"])) == ["B", "A", "C"]
    assert points.set_index(["model", "task"]).loc[("A", "rqe"), "score"] == pytest.approx(0.61)
    out = [tmp_path / "hm.png", tmp_path / "hm.pdf"]
    kind.draw(points, "hm", entry, _ctx(), out)
    assert all(p.stat().st_size > 1000 for p in out)
    assert table_kind("lb", ENTRY).runs("lb", ENTRY)[1] == ("tables.lb.models[1]", "as_is@b")


def test_only_a_significant_best_is_bold_and_ties_are_marked() -> None:
    """With bootstrap replicates (the same resamples for every model): B's STS, ahead of A and C on
    every resample, is bold; on RQE, A is ahead of B by a margin the resamples do not confirm:
    no bold, A and B marked as tied. Mean and Mean rank keep their best (untested)."""
    from clinsent.report.paired import Paired

    rng = np.random.default_rng(0)
    base = rng.normal(0, 0.02, 1000)
    reps = {
        ("b", "sts"): 0.79 + base,
        ("a", "sts"): 0.72 + base + rng.normal(0, 0.005, 1000),
        ("c", "sts"): 0.72 + base + rng.normal(0, 0.005, 1000),
        ("a", "rqe"): 0.61 + rng.normal(0, 0.05, 1000),
        ("b", "rqe"): 0.55 + rng.normal(0, 0.05, 1000),
    }
    table = pd.DataFrame(
        [
            {
                "method": "as_is",
                "base_model": m,
                "seed": s,
                "eval_set": t,
                "metric": HEADLINES[t],
                "replicates": list(r),
            }
            for (m, t), r in reps.items()
            for s in (0, 1)
        ]
    )
    ctx = ReportContext(_summary(), pd.DataFrame(), HEADLINES, "a", "paper", paired=Paired(table))
    df = table_kind("lb", ENTRY).table("lb", ENTRY, ctx)
    rows = df.set_index("model")
    bold = {(df.at[i, "model"], c) for i, c in df.attrs["bold"]}
    assert ("B", "sts") in bold and not any(c == "rqe" for _, c in bold)
    assert rows.loc["A", "rqe"].endswith(" ≈") and rows.loc["B", "rqe"].endswith(" ≈")
    assert not rows.loc["B", "sts"].endswith("≈") and {("B", "Mean"), ("B", "Mean rank")} <= bold
    # C's STS replicates undefined (constant gold on its resamples): C is untested ("?"), not a tie,
    # and B's STS is no longer bold (it was not shown to beat C)
    undefined = table.copy()
    undefined["replicates"] = [
        [float("nan")] * 1000 if (m, t) == ("c", "sts") else r
        for m, t, r in zip(undefined["base_model"], undefined["eval_set"], undefined["replicates"], strict=True)
    ]
    ctx = ReportContext(_summary(), pd.DataFrame(), HEADLINES, "a", "paper", paired=Paired(undefined))
    df2 = table_kind("lb", ENTRY).table("lb", ENTRY, ctx)
    rows2 = df2.set_index("model")
    bold2 = {(df2.at[i, "model"], c) for i, c in df2.attrs["bold"]}
    assert rows2.loc["C", "sts"].endswith(" ?") and not rows2.loc["C", "sts"].endswith("≈")
    assert ("B", "sts") not in bold2 and not rows2.loc["A", "sts"].endswith(("?", "≈"))
    # the decision is the 2.5th percentile of the paired differences (hand computation)
    assert (
        np.percentile(reps[("a", "rqe")] - reps[("b", "rqe")], 2.5)
        <= 0
        < np.percentile(reps[("b", "sts")] - reps[("a", "sts")], 2.5)
    )
