"""The summary contract, the Table-3-style table, and conda env pins matching the lock."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from clinsent.report.summary import SUMMARY_COLUMNS, summary_rows
from clinsent.report.tables import results_table, to_latex, to_markdown

REPO = Path(__file__).resolve().parents[2]


def _records() -> list[dict]:
    out = []
    for seed, value in [(0, 0.70), (1, 0.74)]:
        for name in ["train", "test"]:
            out.append(
                {
                    "method": "medse",
                    "base_model": "bert",
                    "seed": seed,
                    "eval_set": name,
                    "step": 25 * (seed + 1),
                    "metrics": {"spearman": value, "pearson": 0.5, "alignment": 0.3, "uniformity": -2.0},
                }
            )
    out.append(
        {
            "method": "none",
            "base_model": "bert",
            "seed": 0,
            "eval_set": "train",
            "step": 0,
            "metrics": {"spearman": 0.6, "pearson": 0.5, "alignment": 0.3, "uniformity": -2.0},
        }
    )
    return out


STS = ["spearman", "pearson", "alignment", "uniformity"]


def test_summary_columns_and_rows() -> None:
    df = summary_rows(_records(), {"train": STS, "test": STS})
    assert (
        list(df.columns)
        == SUMMARY_COLUMNS
        == ["method", "base_model", "seed", "eval_set", "metric", "value", "step", "ci_low", "ci_high"]
    )
    assert len(df) == 5 * 4
    assert df["ci_low"].isna().all()  # these results carry no intervals: the cells stay empty
    with_ci = _records()[:1]
    with_ci[0]["metrics"] = {**with_ci[0]["metrics"], "ci": {"spearman": [0.1, 0.9]}}
    one = summary_rows(with_ci, {"train": STS, "test": STS}).set_index("metric")
    assert one.loc["spearman", ["ci_low", "ci_high"]].tolist() == [0.1, 0.9] and one.loc["alignment", "ci_low"] != 0
    shown = results_table(one.reset_index(), {"train": "spearman"}, ["medse"])  # one seed: the interval beside it
    assert shown["train"].tolist() == [f"{with_ci[0]['metrics']['spearman']:.3f} [0.100, 0.900]"]
    assert df[(df["method"] == "none")]["step"].unique().tolist() == [0]


def test_table_mean_std_over_seeds() -> None:
    table = results_table(
        summary_rows(_records(), {"train": STS, "test": STS}),
        {"train": "spearman", "test": "spearman"},
        ["none", "medse"],
    )
    assert table["method"].tolist() == ["none", "medse"]
    row = table.set_index("method").loc["medse"]
    assert row["train"] == "0.720 ± 0.028"  # mean 0.72, sample std of (0.70, 0.74) = 0.0283
    assert row["seeds"] == 2
    assert table.set_index("method").loc["none", "test"] == "–"
    assert "0.720 ± 0.028" in to_markdown(table, "c")
    assert r"0.720 $\pm$ 0.028" in to_latex(table, "c")


def _pins(path: Path) -> dict[str, str]:
    pins = {}
    for line in path.read_text().splitlines():
        m = re.match(r"^([A-Za-z0-9_.\-]+)==([^\s;]+)", line.strip())
        if m:
            pins[m.group(1).lower().replace("_", "-")] = m.group(2)
    return pins


def test_conda_envs_match_the_lock() -> None:
    lock = _pins(REPO / "requirements.lock")
    assert lock["torch"] == "2.13.0"
    for env in sorted((REPO / "envs").glob("*.yaml")):
        spec = yaml.safe_load(env.read_text())
        pip = next(d["pip"] for d in spec["dependencies"] if isinstance(d, dict))
        for entry in pip:
            m = re.match(r"^([A-Za-z0-9_.\-]+)==(\S+)$", entry)
            if m:
                name = m.group(1).lower().replace("_", "-")
                assert lock.get(name) == m.group(2), f"{env.name}: {entry} != lock {lock.get(name)}"
