"""A toy method, a toy task and a toy table kind, registered by a plugin file
(tests/plugins/toy.py) without touching the trainer, the rules, the schema, the report or the
scripts, run through the workflow on a tiny BERT."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import yaml

from testkit import REPO
from testkit.workflow import resume_config, snakemake

pytestmark = pytest.mark.workflow


def test_toy_method_and_task_through_the_workflow(tmp_path: Path, tiny_bert: Path) -> None:
    # a sentence corpus, not the notes pipeline: the plugin's path is what this test is about
    cfg = resume_config(tiny_bert, "results")
    (tmp_path / "lines.txt").write_text("History of asthma.\nThe patient has gout.\nNo acute distress.\n")
    cfg["plugins"] = [str(REPO / "tests" / "plugins" / "toy.py")]
    cfg["methods"] = {
        "none": {"objective": "none"},
        "spread": {"objective": "toy_spread", "scale": 2.0, "sentences": "pubmed"},
    }
    cfg["eval_sets"]["toy"] = {"task": "toy_norm", "path": "lines.txt", "curve": True}
    cfg["training"].update(steps=2, eval_every=1, checkpoint_every=2)
    cfg["tables"] = {
        "ranked": {
            "kind": "toy_ranking",
            "caption": "Runs by mean norm.",
            "eval_set": "toy",
            "runs": ["spread", "none"],
        }
    }
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    run = snakemake(tmp_path, "all", "--cores", "2", "--resources", "gpu=1")
    assert run.returncode == 0, run.stderr[-5000:]
    summary = pd.read_csv(tmp_path / "results" / "summary.csv")
    toy = summary[summary["eval_set"] == "toy"]
    assert set(toy["metric"]) == {"mean_norm"} and set(toy["method"]) == {"none", "spread"}
    assert (toy["value"] > 0).all()
    curve = pd.read_csv(tmp_path / "results/models/spread/tiny/seed0/curve.csv")
    assert set(curve["eval_set"]) == {"sel", "toy"} and "loss_spread" in curve.columns
    assert curve.loc[curve["step"] > 0, "loss_spread"].notna().all()
    assert "mean_norm" in (tmp_path / "results/tables/results.md").read_text()
    # the toy table kind: its cited runs were trained, its input file read, its table written
    ranked = pd.read_csv(tmp_path / "results/tables/paper/ranked.csv")
    means = toy.groupby("method")["value"].mean().sort_values(ascending=False)
    assert ranked["run"].tolist() == means.index.tolist() and (ranked["lines"] == 3).all()
    assert ranked["mean_norm"].tolist() == pytest.approx(means.round(4).tolist())
    assert "Runs by mean norm." in (tmp_path / "results/tables/paper/ranked.md").read_text()
