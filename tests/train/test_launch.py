"""A train job over several processes as torch's launcher starts it (clinsent.train.launch): one
node is ``torchrun --standalone``, several nodes are ``srun`` + torchrun with a c10d rendezvous on
the allocation's first node, refused outside Slurm; the job a process reads is the job written."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from clinsent.errors import InputError
from clinsent.train.job import TrainJob
from clinsent.train.launch import SHUTDOWN_SECONDS, first_host, launcher_command


def _job(**how: Any) -> TrainJob:
    params = {"method": {"objective": "simcse"}, "checkpoint_dir": "results/checkpoints/m/b/seed0"}
    return TrainJob(params=params, inputs={"plan": "results/plans/p.parquet"}, model="results/models/m", seed=0, **how)


def test_one_node_is_torchruns_standalone_launch() -> None:
    command = launcher_command(_job(processes=4), Path("spec.json"), {})
    assert command == [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc-per-node=4",
        f"--shutdown-timeout={SHUTDOWN_SECONDS}",
        "--standalone",
        "-m",
        "clinsent.train.worker",
        "spec.json",
    ]


def test_several_nodes_start_one_launcher_per_node_with_a_rendezvous_on_the_first() -> None:
    env = {"SLURM_JOB_NODELIST": "gpu[07-08]", "SLURM_JOB_ID": "4242"}
    command = launcher_command(_job(processes=4, nodes=2), Path("spec.json"), env)
    assert command[:3] == ["srun", "--nodes=2", "--ntasks-per-node=1"]
    assert "--nnodes=2" in command and "--nproc-per-node=4" in command and "--standalone" not in command
    assert "--rdzv-backend=c10d" in command and "--rdzv-id=4242" in command
    assert any(a.startswith("--rdzv-endpoint=") and a.endswith(":29500") for a in command)
    with pytest.raises(InputError, match=r"training\.nodes: a job across 2 nodes is started by srun"):
        launcher_command(_job(processes=4, nodes=2), Path("spec.json"), {})


def test_the_first_host_of_a_slurm_node_list() -> None:
    def scontrol(*_args: Any, **_kwargs: Any) -> SimpleNamespace:
        return SimpleNamespace(stdout="gpu07\ngpu08\n")

    assert first_host("gpu[07-08]", scontrol) == "gpu07"
    assert first_host("a,b", lambda *a, **k: SimpleNamespace(stdout="")) == "a"


def test_the_job_a_process_reads_is_the_job_written() -> None:
    job = _job(processes=2, threads=4, tracking=["tensorboard"], owned=["results"], protected=["notes.csv"])
    assert TrainJob.loads(job.dumps()) == job
    assert job.across == 2 and _job(processes=2, nodes=3).across == 6
    assert job.handoff() == Path("results/checkpoints/m/b/seed0.launch")
