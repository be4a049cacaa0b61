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
from distributed_worker import CASES, _train  # type: ignore[import-not-found]

from clinsent.methods import METHODS

WORKER = Path(__file__).with_name("distributed_worker.py")
TOL = 1e-5


def _launch(tiny_bert: Path, out: Path, case: str, *extra: str) -> list[dict[str, Any]]:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2"]
    done = subprocess.run(
        [*command, str(WORKER), str(tiny_bert), str(out), case, *extra],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
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


def test_a_deterministic_job_on_two_processes_trains_the_one_process_model(tiny_bert: Path, tmp_path: Path) -> None:
    """The trainer over two processes (dropout off, token shuffles as the views' noise) against one
    process: the same curve, the same selected step, the same model (every STS sentence's embedding
    within cosine 0.9999), and a record that says how it ran. Then a SIGTERM to process 1 alone
    stops both after the same step with one checkpoint; the rerun resumes there and ends as the
    uninterrupted run."""
    import numpy as np
    import pandas as pd

    from clinsent.embedding.vectors import load_model
    from clinsent.train.checkpoint import BEST
    from clinsent.train.trainer import place_model

    from testkit.trainer import DISEASES

    one = _train(tiny_bert, None, tmp_path / "one", 0)
    (two,) = _launch(tiny_bert, tmp_path / "two.jsonl", "train", str(tmp_path / "two"), "0")
    # the processes write no output: process 0 leaves the model in the working folder, holding no
    # lock at the end, and the job's own process (here, this one) places it
    assert not (tmp_path / "two" / "model").exists() and (tmp_path / "two" / "model.ckpt" / BEST).is_dir()
    assert two["locks"] == []
    place_model(tmp_path / "two" / "model.ckpt", tmp_path / "two" / "model")
    curve1, curve2 = pd.DataFrame(one["curve"]), pd.DataFrame(two["curve"])
    pd.testing.assert_frame_equal(curve1, curve2, rtol=1e-5)
    assert one["info"]["selected_step"] == two["info"]["selected_step"]
    assert two["info"]["processes"] == {"processes": 2, "backend": "gloo", "rows_per_process": 4}
    assert one["info"]["processes"]["processes"] == 1
    texts = [f"The patient has {d}." for d in DISEASES]
    a = load_model(str(tmp_path / "one" / "model")).encode(texts, convert_to_numpy=True)
    b = load_model(str(tmp_path / "two" / "model")).encode(texts, convert_to_numpy=True)
    cosines = (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    assert float(cosines.min()) >= 0.9999, cosines

    (stopped,) = _launch(tiny_bert, tmp_path / "stop.jsonl", "train", str(tmp_path / "three"), "3")
    assert "stopped by signal 15 after step 3" in stopped["preempted"]
    assert sorted(p.name for p in (tmp_path / "three" / "model.ckpt").glob("state-*.pt"))[-1] == "state-00000003.pt"
    (resumed,) = _launch(tiny_bert, tmp_path / "resume.jsonl", "train", str(tmp_path / "three"), "0")
    assert resumed["info"]["resumed_from_step"] == 3
    pd.testing.assert_frame_equal(pd.DataFrame(resumed["curve"]), curve2, rtol=1e-5)
