"""The committed demo data is exactly what the seeded generator writes; atomic writers."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from clinsent.io.files import atomic_path, write_parquet

from testkit.readers import read_noteevents

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "resources" / "demo"
FILES = [
    "NOTEEVENTS.demo.csv",
    "efo.demo.obo",
    "clinical_sts.demo.select.tsv",
    "clinical_sts.demo.test.tsv",
    "mednli.demo.train.jsonl",
    "rqe.demo.dev.xml",
    "rqe.demo.test.xml",
    "pubmed.demo.sentences.txt",
    "cmed.demo.sentences.txt",
    "biosses.demo.tsv",
    "cmedic.demo.tsv",
    "cmedqq.demo.jsonl",
    "mednli.demo.dev.jsonl",
    "mednli.demo.test.jsonl",
    "radnli.demo.dev.jsonl",
    "snli.demo.train.jsonl",
    "multinli.demo.train.jsonl",
    "rqe.demo.train.xml",
]


def test_generator_reproduces_committed_demo(tmp_path: Path) -> None:
    subprocess.run([sys.executable, str(DEMO / "generate.py"), "--out", str(tmp_path)], check=True)
    for name in FILES:
        assert (tmp_path / name).read_bytes() == (DEMO / name).read_bytes(), name


def test_demo_notes_have_what_the_issue_asks_for() -> None:
    notes = read_noteevents(DEMO / "NOTEEVENTS.demo.csv", None, drop_errors=False)
    ds = notes[notes["category"] == "Discharge summary"]
    assert len(ds) >= 300
    assert (notes["category"] != "Discharge summary").any()
    assert len(read_noteevents(DEMO / "NOTEEVENTS.demo.csv", ["Discharge summary"])) < len(ds)  # ISERROR=1 dropped
    text = "\n".join(ds["text"])
    for needle in ["[**", "p.o.", "b.i.d.", "q.d.", "History of Present Illness:", "CHF", "DM2", "HTN", "COPD", "MDD"]:
        assert needle in text, needle


def test_atomic_writers_leave_nothing_on_failure(tmp_path: Path) -> None:
    target = tmp_path / "out.parquet"
    with pytest.raises(RuntimeError):
        with atomic_path(target) as tmp:
            tmp.write_text("half")
            raise RuntimeError("boom")
    assert list(tmp_path.iterdir()) == []
    write_parquet(pd.DataFrame({"a": [1]}), target)
    assert pd.read_parquet(target)["a"].tolist() == [1] and len(list(tmp_path.iterdir())) == 1
