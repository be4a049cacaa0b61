"""One step over several processes (clinsent.train.spread), on the CPU: two gloo processes started by
torch's own launcher against one process, a tiny random BERT, dropout off. For every registered
trained objective (and the cached, accumulated and grouped forms) the loss parts are equal and every
gradient is within 1e-5 of one process's, relative to the tensor's largest where that exceeds 1;
with DDP's all-reduce skipped, the parameter check refuses to go on."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from spread_worker import CASES  # type: ignore[import-not-found]

from clinsent.methods import METHODS

WORKER = Path(__file__).with_name("spread_worker.py")
TOL = 1e-5


def _launch(tiny_bert: Path, out: Path, case: str) -> list[dict[str, Any]]:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2"]
    done = subprocess.run(
        [*command, str(WORKER), str(tiny_bert), str(out), case], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return [json.loads(line) for line in out.read_text().splitlines()]


@pytest.fixture(scope="module")
def spread(tiny_bert: Path, tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    return _launch(tiny_bert, tmp_path_factory.mktemp("spread") / "cases.jsonl", "all")


def test_every_trained_objective_is_covered() -> None:
    trained = {name for name in METHODS.names() if METHODS.get(name).loss_class}  # every objective with a loss
    assert trained <= {objective for objective, _ in CASES}, trained


@pytest.mark.parametrize("index", range(len(CASES)), ids=[f"{o}-{'-'.join(map(str, k.values()))}" for o, k in CASES])
def test_two_processes_give_one_process_loss_and_gradients(spread: list[dict[str, Any]], index: int) -> None:
    row = spread[index]
    assert (row["objective"], row["knobs"]) == (CASES[index][0], CASES[index][1])
    assert row["parts_equal_keys"]
    for part, (one, two) in row["loss"].items():
        assert abs(one - two) <= TOL, (part, one, two)
    assert row["moved"] > row["tensors"] // 2  # the comparison is not between zeros
    assert row["worst_gradient"] <= TOL, (row["worst_tensor"], row["worst_gradient"])


def test_a_skipped_all_reduce_is_refused_loudly(tiny_bert: Path, tmp_path: Path) -> None:
    (row,) = _launch(tiny_bert, tmp_path / "desync.jsonl", "desync")
    assert "processes' parameters differ" in row["refused"]
    assert "encoder.embeddings.word_embeddings.weight" in row["refused"]
