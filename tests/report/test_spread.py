"""The spread check (clinsent.report.spread): ceilings, floors and rows within the seeds' spread,
on small summaries whose answers are worked out by hand; and its line in the report job's log."""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd
import pytest

from clinsent.report.kinds.runs import paper_cells
from clinsent.report.spread import bounds, check
from clinsent.report.tables import results_cells


def _cells(**rows: list[float]) -> dict[str, dict[str, np.ndarray]]:
    return {"col": {label: np.array(v) for label, v in rows.items()}}


def test_bounds_of_correlations_shares_and_others() -> None:
    assert bounds("spearman") == bounds("accuracy") == bounds("recall@10") == bounds("weighted_f1") == (0.0, 1.0)
    assert bounds("pearson_p") is None and bounds("threshold@90") is None and bounds("uniformity") is None


def test_rows_apart_by_more_than_their_std_pass() -> None:
    # means 0.50 and 0.60 (gap 0.10); sample stds 0.0141 and 0.0283: apart
    spread = check(_cells(a=[0.49, 0.51], b=[0.58, 0.62]), {"col": "spearman"})
    assert spread.ok and spread.widest is not None
    column, a, b, diff, sd = spread.widest
    assert (column, a, b) == ("col", "a", "b") and diff == pytest.approx(0.10)
    assert sd == pytest.approx(np.std([0.58, 0.62], ddof=1))
    assert "rows told apart" in spread.line("tables.t") and "'a' vs 'b'" in spread.line("tables.t")
    assert spread.sentence() == (
        "Spread: the rows are told apart; the widest gap is 0.100, in `col`, between a and b (seed std 0.028)."
    )


def test_rows_within_the_seed_spread_fail() -> None:
    # gap 0.02 < the std of b (0.0566)
    spread = check(_cells(a=[0.50, 0.50], b=[0.48, 0.56]), {"col": "spearman"})
    assert spread.problems == ["no two rows differ by more than the seeds' standard deviation"]


def test_one_seed_counts_any_visible_gap() -> None:
    assert check(_cells(a=[0.5000], b=[0.5004]), {"col": "mrr"}).problems  # below three decimals
    one = check(_cells(a=[0.500], b=[0.502]), {"col": "mrr"})
    assert one.ok and "(one seed: no seed spread)" in one.line("t") and "seed std" not in one.line("t")
    assert "(seed std 0.0000)" in check(_cells(a=[0.5, 0.5], b=[0.6, 0.6]), {"col": "mrr"}).line("t")


def test_ceiling_and_floor_in_every_row_fail_even_when_rows_differ() -> None:
    ceiling = check(_cells(a=[0.985], b=[1.0]), {"col": "accuracy"})
    assert ceiling.problems == ["'col' is at its ceiling (1) in every row"]
    floor = check(_cells(a=[0.001], b=[-0.015]), {"col": "spearman"})  # |r| <= 0.02: no correlation
    assert floor.problems == ["'col' is at its floor (0) in every row"]
    assert check(_cells(a=[0.97], b=[1.0]), {"col": "accuracy"}).ok  # one row below the ceiling
    assert check(_cells(a=[3.0], b=[9.0]), {"col": "components@90"}).ok  # unbounded: not judged


def test_a_single_row_is_judged_on_its_bounds_only() -> None:
    assert check(_cells(a=[0.4, 0.5]), {"col": "spearman"}).ok
    assert not check(_cells(a=[0.999]), {"col": "accuracy"}).ok


SUMMARY = pd.DataFrame(
    [
        {"method": m, "base_model": "b", "seed": s, "eval_set": "sts", "metric": "spearman", "value": v, "step": 0}
        for m, vals in {"none": [0.30, 0.30], "simcse": [0.40, 0.42], "medse": [0.41, 0.43]}.items()
        for s, v in enumerate(vals)
    ]
)


def test_cells_of_a_runs_table_and_of_the_results_table() -> None:
    table = {
        "rows": [
            {"label": "None", "cells": ["none", None]},
            {"label": "SimCSE", "cells": ["simcse", "medse"]},
            {"group": "g", "label": "SimCSE", "cells": ["medse", None]},
        ],  # a label again, in a group
        "columns": ["x", "y"],
    }
    cells, metrics = paper_cells(SUMMARY, table, {"sts": "spearman"}, "b")
    assert metrics == {"sts x": "spearman", "sts y": "spearman"}
    assert cells["sts x"]["None"].tolist() == [0.30, 0.30] and list(cells["sts y"]) == ["SimCSE"]
    assert list(cells["sts x"]) == ["None", "SimCSE", "g / SimCSE"] and cells["sts x"]["g / SimCSE"][0] == 0.41
    assert check(cells, metrics).ok  # None vs SimCSE: 0.11 apart, std 0.014
    cells, metrics = results_cells(SUMMARY, {"sts": "spearman"})
    assert list(cells["sts"]) == ["none@b", "simcse@b", "medse@b"]
    # simcse vs medse alone: 0.01 apart, std 0.014 -> not told apart
    assert not check({"sts": {k: cells["sts"][k] for k in ("simcse@b", "medse@b")}}, metrics).ok


def test_the_paper_report_logs_one_spread_line_per_runs_table(tmp_path, caplog) -> None:
    from clinsent.report.build import build_paper_report

    summary = tmp_path / "summary.csv"
    SUMMARY.to_csv(summary, index=False)
    curve = tmp_path / "curve.csv"
    pd.DataFrame({"step": [0], "eval_set": ["sts"], "metric": ["spearman"], "score": [0.3], "loss": [1.0]}).to_csv(
        curve, index=False
    )
    jobs = [{"method": m, "base_model": "b", "seed": s} for m in ("none", "simcse", "medse") for s in (0, 1)]
    tables = {
        "good": {
            "caption": "c",
            "rows": [{"label": "None", "cells": ["none"]}, {"label": "SimCSE", "cells": ["simcse"]}],
        },
        "flat": {
            "caption": "c",
            "rows": [{"label": "SimCSE", "cells": ["simcse"]}, {"label": "MED-SE", "cells": ["medse"]}],
        },
    }
    (tmp_path / "t").mkdir()
    (tmp_path / "f").mkdir()
    with caplog.at_level(logging.INFO, logger="clinsent.report"):
        build_paper_report(
            str(summary),
            jobs,
            [str(curve)] * len(jobs),
            tables,
            {},
            {"sts": "spearman"},
            "b",
            "paper",
            str(tmp_path / "t"),
            str(tmp_path / "f"),
        )
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("spread:")]
    assert lines[0].startswith("spread: tables.good: rows told apart")
    assert lines[1].startswith("spread: tables.flat: no two rows differ") and len(lines) == 2
    assert [r.levelname for r in caplog.records if r.getMessage().startswith("spread:")] == ["INFO", "WARNING"]
    # the same finding, under the table it speaks about (markdown's last line, the LaTeX caption's end)
    good, flat = ((tmp_path / "t" / f"{t}.md").read_text().rstrip().splitlines()[-1] for t in ("good", "flat"))
    assert good.startswith("Spread: the rows are told apart; the widest gap is")
    assert flat.startswith("Spread: no two rows differ") and "may differ by noise alone" in flat
    assert "Spread: no two rows differ" in (tmp_path / "t" / "flat.tex").read_text()


def test_a_spread_line_warns_only_when_its_table_fails(caplog) -> None:
    """Spread.log, which the results table and every paper table go through: INFO on a pass,
    WARNING on a failure, the same text as Spread.line."""
    log = logging.getLogger("clinsent.report")
    passing = check(_cells(a=[0.49, 0.51], b=[0.58, 0.62]), {"col": "spearman"})
    failing = check(_cells(a=[0.50, 0.50], b=[0.48, 0.56]), {"col": "spearman"})
    with caplog.at_level(logging.INFO, logger="clinsent.report"):
        passing.log(log, "tables/results")
        failing.log(log, "tables/results")
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        ("INFO", passing.line("tables/results")),
        ("WARNING", failing.line("tables/results")),
    ]


def test_one_seed_uses_the_paired_bootstrap_where_there_are_replicates() -> None:
    """One seed: no std, so a visible gap used to count; with replicates, only a gap a paired
    bootstrap confirms does (and without replicates for a pair, the gap still counts)."""
    from clinsent.report.paired import Paired
    from clinsent.report.spread import check, paired_rows

    rng = np.random.default_rng(1)
    noise = rng.normal(0, 0.03, 1000)
    cells = {"sts": {"none@m": np.array([0.700]), "simcse@m": np.array([0.718])}}
    close = pd.DataFrame(
        [
            {
                "method": m,
                "base_model": "m",
                "seed": 0,
                "eval_set": "sts",
                "metric": "spearman",
                "replicates": list(v + noise + rng.normal(0, 0.03, 1000)),
            }
            for m, v in (("none", 0.700), ("simcse", 0.718))
        ]
    )
    assert not check(cells, {"sts": "spearman"}).problems  # the gap alone: told apart
    told = check(cells, {"sts": "spearman"}, paired=paired_rows(Paired(close), {"sts": "spearman"}))
    assert told.problems == [
        "no two rows differ by more than the seeds' standard deviation and by a paired bootstrap on the items"
    ]
    apart = close.assign(replicates=[list(0.700 + noise), list(0.718 + noise)])  # the same resamples, a fixed gap
    assert check(cells, {"sts": "spearman"}, paired=paired_rows(Paired(apart), {"sts": "spearman"})).ok
    assert check(cells, {"sts": "spearman"}, paired=paired_rows(Paired(None), {"sts": "spearman"})).ok
