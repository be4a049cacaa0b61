"""Our MTEB-format results load with the mteb package's own TaskResult, and give back the main
score and every metric we wrote."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clinsent.benchmark.mteb import files_revision, task_result

from testkit.readers import model_path_name

mteb = pytest.importorskip("mteb")  # a dev dependency (requirements-dev.lock)


def test_a_task_result_loads_with_mteb_and_keeps_its_scores(tmp_path: Path) -> None:
    data = tmp_path / "biosses.tsv"
    data.write_text("s1\ts2\t3.0\n", encoding="utf-8")
    metrics = {
        "spearman": 0.81,
        "pearson": 0.8,
        "pearson_p": 1e-5,
        "n_pairs": 20,
        "postprocess": None,
        "nan_metric": float("nan"),
    }
    result = task_result("ClinSent.biosses", "test", metrics, "spearman", 1.5, files_revision([data]), ["en"])
    folder = tmp_path / "mteb" / model_path_name("pkg minilm/as_is") / "no_revision_available"
    folder.mkdir(parents=True)
    path = folder / "ClinSent.biosses.json"
    path.write_text(json.dumps(result), encoding="utf-8")
    loaded = mteb.TaskResult.from_disk(path)
    assert loaded.task_name == "ClinSent.biosses" and loaded.evaluation_time == 1.5
    assert loaded.dataset_revision == files_revision([data]) and len(loaded.dataset_revision) == 16
    assert loaded.get_score() == pytest.approx(0.81)
    entry = loaded.scores["test"][0]
    assert entry["pearson"] == pytest.approx(0.8) and entry["n_pairs"] == 20 and entry["languages"] == ["eng-Latn"]
    assert "postprocess" not in entry and "nan_metric" not in entry
    assert folder.parent.name == "pkg_minilm__as_is"
    with pytest.raises(KeyError, match="headline metric 'mrr'"):
        task_result("t", "test", metrics, "mrr", None, "x", ["en"])
