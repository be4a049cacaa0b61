"""Snakemake runs of the workflow for the tests: the one helper (:func:`snakemake`, on
:func:`clinsent.runner.smk.snakemake_command`), the tiny configs the workflow tests share, and what a
dry run lists."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from clinsent.demo.note_layouts import write_noteevents
from clinsent.demo.notes import generate_notes
from clinsent.runner.smk import snakemake_command

from testkit import DEMO

OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "MEDCAT_DISABLE_VERSION_CHECK": "true"}


def snakemake(
    workdir: Path, *args: str, env: dict[str, str] | None = None, timeout: float = 1500, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """The workflow run in ``workdir`` with ``args`` (offline switches on, this interpreter's
    folder first on PATH; ``env``: the whole environment instead)."""
    if env is None:
        env = {**os.environ, **OFFLINE}
        env["PATH"] = f"{Path(sys.executable).parent}:{env['PATH']}"
    return subprocess.run(
        snakemake_command(workdir, *args), capture_output=True, text=True, env=env, timeout=timeout, cwd=cwd
    )


def tiny_config(tmp: Path, tiny_bert: Path) -> dict[str, Any]:
    """The notes pipeline and two methods on the tiny BERT, on 25 demo notes and 30 STS pairs."""
    write_noteevents(tmp / "notes.csv", generate_notes(25, seed=3))
    for name in ("select", "test"):
        lines = (DEMO / f"clinical_sts.demo.{name}.tsv").read_text().splitlines()[:30]
        (tmp / f"{name}.tsv").write_text("\n".join(lines) + "\n")
    return {
        "notes": {"path": "notes.csv"},
        "corpus": {"shards": 2},
        "ontology": {"path": str(DEMO / "efo.demo.obo")},
        "batching": {"duplicate_sim_batches": 50, "duplicate_sim_batch_size": 8},
        "base_models": {"tiny": str(tiny_bert)},
        "eval_sets": {
            "sel": {"path": "select.tsv", "format": "n2c2_sts"},
            "test": {"path": "test.tsv", "format": "n2c2_sts"},
        },
        "selection_set": "sel",
        "seeds": [0],
        "training": {"steps": 4, "batch_size": 8, "max_length": 32, "eval_every": 2, "learning_rate": 1e-4},
        "methods": {
            "none": {"objective": "none", "pooling": "first_last"},
            "simcse": {"objective": "simcse", "pooling": "cls", "corpus": "s_all", "duplicates": "naive"},
            "medse": {"objective": "medse", "corpus": "s_ent", "duplicates": "replace", "lambda": 0.1},
        },
    }


def planned_outputs(dry_run_stdout: str) -> dict[str, list[str]]:
    """rule -> output paths of every job a dry run would execute."""
    jobs: dict[str, list[str]] = {}
    rule = None
    for line in dry_run_stdout.splitlines():
        m = re.match(r"^(?:local)?rule (\w+):", line.strip())
        if m:
            rule = m.group(1)
            jobs.setdefault(rule, [])
        elif rule and line.strip().startswith("output:"):
            jobs[rule].append(line.split(":", 1)[1].strip())
    return jobs


def resume_config(tiny_bert: Path, results: str) -> dict[str, Any]:
    """A small sentence-corpus run (no notes pipeline): one simcse job that checkpoints every 4 steps."""
    return {
        "results": results,
        "sentence_corpora": {"pubmed": {"path": str(DEMO / "pubmed.demo.sentences.txt"), "sample": 480}},
        "base_models": {"tiny": str(tiny_bert)},
        "eval_sets": {
            "sel": {"format": "table", "path": str(DEMO / "biosses.demo.tsv"), "split": "dev", "scale_max": 4}
        },
        "selection_set": "sel",
        "seeds": [0],
        "training": {
            "steps": 60,
            "batch_size": 8,
            "max_length": 32,
            "eval_every": 1,
            "checkpoint_every": 4,
            "learning_rate": 1e-4,
            "threads": 1,
        },
        "methods": {"simcse": {"objective": "simcse", "pooling": "cls", "sentences": "pubmed"}},
    }
