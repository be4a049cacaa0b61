"""docs/own-files.md: every config block on the page is read and planned as a dry run reads it
(schema, registries, header checks of the files that exist; placeholder paths of files one does
not have are left out of the DAG as `placeholders_ok` does), so the page cannot drift from the keys."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from clinsent.door.open import open_plan
from clinsent.plan.jobs import job_counts

REPO = Path(__file__).resolve().parents[2]
BLOCKS = re.findall(r"```yaml\n(.*?)```", (REPO / "docs" / "own-files.md").read_text(), re.S)


def test_the_page_has_an_example_per_kind() -> None:
    text = "".join(BLOCKS)
    for kind in (
        "format: table",
        "format: n2c2_sts",
        "task: rqe",
        "task: retrieval",
        "format: nli_jsonl",
        "task: probe",
        "task: token_classification",
        "task: doc_classification",
        "sentence_corpora",
        "training_data",
        "corpus: s_ent",
    ):
        assert kind in text, kind


@pytest.mark.parametrize("block", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_each_example_dry_runs(block: str, tmp_path: Path) -> None:
    config = tmp_path / "example.yaml"
    config.write_text(block)
    cwd = os.getcwd()
    os.chdir(REPO)  # the examples' paths are from the repository, as a user's are from the workflow's folder
    try:
        plan = open_plan(str(config), {"placeholders_ok": True})
    finally:
        os.chdir(cwd)
    assert job_counts(plan)["train"] >= 6
