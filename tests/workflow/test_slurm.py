"""The workflow on a real Slurm cluster through profiles/slurm, and the profile's dry run.

The integration test brings up a single-node Slurm on loopback with
``profiles/slurm/loopback.sh`` (munge, slurmctld, slurmd, two fake GPUs), runs a reduced
config through ``--profile profiles/slurm`` with its trained model over two processes
(``training.processes: 2``, gloo), checks that training jobs asked Slurm for their GPUs and that
the results equal a local run's, makes a job fail on the cluster, and stops the cluster. It is
skipped, with the reason, where Slurm is not installed or we are not root; ``.ci/run`` installs
Slurm, so it runs in CI.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
import yaml

from clinsent.runner.smk import snakemake_command

from testkit import REPO
from testkit.workflow import planned_outputs, snakemake, tiny_config

LOOPBACK = REPO / "profiles" / "slurm" / "loopback.sh"
PROFILE = REPO / "profiles" / "slurm"
HAS_PLUGIN = importlib.util.find_spec("snakemake_executor_plugin_slurm") is not None


def _slurm_missing() -> str | None:
    if not HAS_PLUGIN:
        return "snakemake-executor-plugin-slurm is not installed (it is in requirements.lock: run make install)"
    if os.geteuid() != 0:
        return "the loopback cluster needs root (it writes /etc/slurm and starts the daemons)"
    missing = [b for b in ("sbatch", "sinfo", "squeue") if shutil.which(b) is None]
    missing += [b for b in ("slurmctld", "slurmd", "munged") if not Path("/usr/sbin", b).exists()]
    if missing:
        return f"Slurm is not installed ({', '.join(missing)} missing): run profiles/slurm/loopback.sh install"
    return None


def _daemons() -> list[str]:
    out = subprocess.run(["ps", "-eo", "pid=,comm="], capture_output=True, text=True).stdout
    return [line.strip() for line in out.splitlines() if line.split()[-1] in ("slurmctld", "slurmd")]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    reason = _slurm_missing()
    if reason:
        pytest.skip(reason)
    if _daemons():
        pytest.skip(f"a Slurm is already running here ({_daemons()}); not starting a second one")
    run_dir = tmp_path_factory.mktemp("slurm")
    up = subprocess.run([str(LOOPBACK), "up", str(run_dir)], capture_output=True, text=True, timeout=180)
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        yield run_dir
    finally:
        down = subprocess.run([str(LOOPBACK), "down", str(run_dir)], capture_output=True, text=True, timeout=120)
        assert down.returncode == 0, down.stdout + down.stderr
        assert not _daemons(), f"left running: {_daemons()}"
        assert not Path("/etc/slurm/slurm.conf").exists()


def _slurm_env() -> dict[str, str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "MEDCAT_DISABLE_VERSION_CHECK": "true"}
    env["PATH"] = f"{Path(sys.executable).parent}:{env['PATH']}"
    return env


def _slurm_command(workdir: Path, *args: str, timeout: int = 1200) -> list[str]:
    # SIGINT, not SIGTERM: the executor only stops waiting for jobs on an interrupt
    return [
        "timeout",
        "-s",
        "INT",
        str(timeout),
        *snakemake_command(
            workdir,
            "--profile",
            str(PROFILE),
            # the first status check 2 s after a submission, not the plugin's 40 (a loopback cluster
            # answers at once; a real one keeps the profile's default): a stage's jobs take seconds here
            "--slurm-init-seconds-before-status-checks",
            "2",
            "--verbose",
            *args,
        ),
    ]


def _slurm_run(workdir: Path, *args: str, timeout: int = 1200) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        _slurm_command(workdir, *args, timeout=timeout),
        capture_output=True,
        text=True,
        env=_slurm_env(),
        timeout=timeout + 60,
    )


def _reduced(cfg: dict) -> dict:
    cfg["methods"] = {k: v for k, v in cfg["methods"].items() if k in ("none", "medse")}
    return cfg


def _preempt_when_training(run: subprocess.Popen[str], workdir: Path, method: str) -> str | None:
    """Once `method`'s train job has logged its first training step, send its Slurm job SIGTERM
    (`scancel --signal=TERM`, as preemption or a time limit does); the job id, or None if the
    run ended first."""
    log = workdir / "results" / "logs" / "train" / f"{method}_tiny_seed0.log"
    deadline = time.monotonic() + 900
    while run.poll() is None and time.monotonic() < deadline:
        if log.exists() and "step 2:" in log.read_text(errors="replace"):
            queue = subprocess.run(["squeue", "-h", "-o", "%i|%k"], capture_output=True, text=True).stdout
            job = next(
                (line.split("|")[0] for line in queue.splitlines() if "rule_train" in line and method in line), None
            )
            if job:
                subprocess.run(["scancel", "--signal=TERM", job], check=True)
                return job
        time.sleep(0.1)
    return None


@pytest.mark.workflow
def test_workflow_on_loopback_slurm(cluster: Path, tmp_path: Path, tiny_bert: Path) -> None:
    """Every check that needs the cluster, in one test: `make test-workflow` spreads tests over two
    pytest-xdist workers, and two tests could bring up two clusters at once (its `xdist_group`
    marker is not honoured under pytest 9). First a failing job, then the preempted run."""
    _a_failing_job_names_its_log(tmp_path / "failing", tiny_bert)
    _preempted_run_matches_local(tmp_path / "preempted", tiny_bert)


def _preempted_run_matches_local(tmp_path: Path, tiny_bert: Path) -> None:
    """The reduced config on the loopback cluster, its MED-SE train job over two processes
    (``training.processes: 2``: torch's launcher, gloo on the CPU, one fake GPU each) preempted
    (SIGTERM) once it is training: both processes stop after the same step, one checkpoint is
    written, the job exits, the profile's retries resubmit it, it resumes, and the summary equals
    an uninterrupted local run of the same config."""
    slurm_dir, local_dir = tmp_path / "slurm", tmp_path / "local"
    for d in (slurm_dir, local_dir):
        (d / "config").mkdir(parents=True)
        cfg = _reduced(tiny_config(d, tiny_bert))
        # long enough to be preempted mid-training; each batch split between two processes
        cfg["training"].update(steps=24, eval_every=2, processes=2)
        # the ontology "downloaded" (a file:// URL: no network here) by its local rule, never on the cluster
        cfg["ontology"] = {
            "path": None,
            "release": {"url": (REPO / "resources/demo/efo.demo.obo").as_uri(), "version": "demo", "dir": "downloads"},
        }
        (d / "config" / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    local = snakemake(local_dir, "all", "--cores", "2", "--resources", "gpu=1")
    assert local.returncode == 0, local.stderr[-3000:]

    t0 = time.perf_counter()
    output = tmp_path / "slurm_run.txt"  # a file, not a pipe: --verbose fills a pipe nobody reads while polling
    with (
        open(output, "w") as sink,
        subprocess.Popen(
            _slurm_command(slurm_dir, "all"), stdout=sink, stderr=subprocess.STDOUT, text=True, env=_slurm_env()
        ) as run,
    ):
        preempted = _preempt_when_training(run, slurm_dir, "medse")
        run.wait(timeout=1500)
    wall = time.perf_counter() - t0
    log = output.read_text(errors="replace")
    assert run.returncode == 0, log[-6000:]
    assert preempted, "the train job finished before it could be preempted"
    print(f"\nworkflow on loopback Slurm, one train job preempted: {wall:.0f} s")
    slurm_logs = list((slurm_dir / ".snakemake" / "slurm_logs" / "rule_train").rglob(f"{preempted}.log"))
    assert slurm_logs and "signal 15 at step" in slurm_logs[0].read_text(errors="replace"), slurm_logs
    selection = json.loads((slurm_dir / "results/models/medse/tiny/seed0/selection.json").read_text())
    assert selection["resumed_from_step"] is not None and selection["resumed_from_step"] >= 2
    # the devices Slurm chose (CUDA_VISIBLE_DEVICES=0,1 for --gpus=2) are kept whole: no local lock
    assert selection["gpu_slot"] == "0,1 (chosen by the scheduler: CUDA_VISIBLE_DEVICES=0,1)", selection["gpu_slot"]
    assert selection["processes"] == {"processes": 2, "backend": "gloo", "rows_per_process": 4}

    # the trained job was submitted with two GPUs (twice: preempted, then resumed), the untrained
    # baseline's with one; small rules never reached sbatch
    sbatch = [line for line in log.splitlines() if "sbatch" in line and "--job-name" in line]
    train = [line for line in sbatch if "rule_train" in line]
    assert len(train) == 3, train
    assert sorted("--gpus=2" in line for line in train) == [False, True, True], train
    assert not any(re.search(r"rule_(report|corpus_stats|corpus_manifest)\b", line) for line in sbatch)
    assert not any("--gpus" in line for line in sbatch if "rule_train" not in line)
    assert any("rule_split_sentences" in line for line in sbatch) and any("rule_ner" in line for line in sbatch)
    assert (slurm_dir / "downloads/efo-demo/efo.obo").is_file() and not any("rule_download" in line for line in sbatch)
    # the profile's groups: each model's embed and evaluate jobs (two eval sets: four jobs) are one
    # submission, the untrained baseline's too; none is submitted alone
    groups = [line for line in sbatch if "rule_score_" in line]
    assert sorted(re.search(r"rule_(score_\w+?_seed0)_embed_evaluate", line).group(1) for line in groups) == [
        "score_medse_tiny_seed0",
        "score_none_tiny_seed0",
    ], groups
    assert not any(re.search(r"rule_(embed|evaluate)\b", line) for line in sbatch)
    print(f"sbatch submissions: {len(sbatch)} ({len(groups)} embed+evaluate groups in place of 8 jobs)")

    ours = pd.read_csv(slurm_dir / "results" / "summary.csv")
    theirs = pd.read_csv(local_dir / "results" / "summary.csv")
    pd.testing.assert_frame_equal(ours, theirs, check_exact=False, atol=1e-6)
    assert subprocess.run(["squeue", "-h"], capture_output=True, text=True).stdout.strip() == ""


def _a_failing_job_names_its_log(tmp_path: Path, tiny_bert: Path) -> None:
    """Bad input on the cluster: the job fails, and the error names its Slurm log and rule log. The
    bad row comes after the first read block (1 MB), which the dry run reads and finds sound."""
    (tmp_path / "config").mkdir(parents=True)
    cfg = _reduced(tiny_config(tmp_path, tiny_bert))
    good = "".join(f'"{i}","Discharge summary","{"Patient seen today and doing well. " * 60}"\n' for i in range(600))
    (tmp_path / "notes.csv").write_text(f'"ROW_ID","CATEGORY","TEXT"\n{good}"x","Discharge summary","Bad id."\n')
    (tmp_path / "config" / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    # bad input fails the same way on every attempt: no resubmission here
    run = _slurm_run(tmp_path, "results/corpus/shards2/notes/000.parquet", "--retries", "0", timeout=600)
    log = run.stdout + run.stderr
    assert run.returncode != 0
    assert "ingest_notes" in log and "ROW_ID is not an integer" in log, log[-4000:]
    m = re.search(r"(\S*\.snakemake/slurm_logs/rule_ingest_notes/\S+\.log)", log)
    assert m, log[-4000:]
    assert "results/logs/ingest_notes.log" in log
    assert subprocess.run(["squeue", "-h"], capture_output=True, text=True).stdout.strip() == ""


@pytest.mark.skipif(not HAS_PLUGIN, reason="snakemake-executor-plugin-slurm is not installed")
def test_slurm_profile_dry_run_of_the_paper_config(tmp_path: Path) -> None:
    """The profile plans config/paper/medse.yaml: 64 corpus shards and the full MED-SE grid, with
    the GPU asked for by the training jobs only, and each model's embed and evaluate jobs grouped."""
    env_path = f"{Path(sys.executable).parent}:{os.environ['PATH']}"
    dry = snakemake(
        tmp_path,
        "--profile",
        str(PROFILE),
        "--configfile",
        str(REPO / "config" / "paper" / "medse.yaml"),
        "--config",
        "placeholders_ok=true",
        "-n",
        "all",
        env={**os.environ, "PATH": env_path},
        timeout=600,
    )
    assert dry.returncode == 0, dry.stderr[-3000:]
    jobs = planned_outputs(dry.stdout)
    assert len(jobs["split_sentences"]) == 64 and len(jobs["ner"]) == 64
    assert (
        len(jobs["train"]) == 291 and len(jobs["embed"]) == 582 and len(jobs["evaluate"]) == 582
    )  # per model and eval set
    assert len(jobs["batch_plan"]) == 60  # plans are shared by methods with the same batches, per seed
    # one submission per model for its embed and evaluate jobs: 291 in place of 1,164
    groups = re.findall(r"Group job (score_\S+) \(", dry.stdout + dry.stderr)
    assert len(groups) == len(set(groups)) == 291, len(groups)
    # the downloads (three base models by Hugging Face id, the EFO release) are local rules: they run on
    # the submitting host, and every cluster job loads local files offline
    assert len(jobs["download_model"]) == 3 and len(jobs["download_ontology"]) == 1
    assert (
        "downloads as local rules, on this host before any job that needs them: download_model (3), "
        "download_ontology (1)" in dry.stderr
    ), dry.stderr[-2000:]


def test_the_default_workflow_profile_never_overrides_the_slurm_profile() -> None:
    """profiles/default is loaded by every plain `snakemake` run and laid over `--profile
    profiles/slurm`: it may only repeat what that profile says, and never set the run's size."""
    default = yaml.safe_load((REPO / "profiles" / "default" / "config.yaml").read_text())
    slurm = yaml.safe_load((PROFILE / "config.yaml").read_text())
    assert default and all(slurm.get(k) == v for k, v in default.items()), default
    assert not {"cores", "jobs", "resources", "keep-going", "latency-wait", "executor"} & set(default)
    make = (REPO / "Makefile").read_text()
    assert "--workflow-profile" not in make and "profiles/local" not in make  # `make demo` is the plain command


def test_the_slurm_profile_where_slurm_is_absent_stops_once_before_submitting() -> None:
    """Issue 83: a run through the Slurm profile on a host without Slurm printed one failed
    submission per job and no fix. The workflow's onstart (before any job is submitted) now stops
    it in one line naming the missing commands and the fix; the local executor needs none."""
    from types import SimpleNamespace

    from clinsent.errors import InputError
    from clinsent.runner.smk import check_executor

    slurm = SimpleNamespace(executor_plugin=SimpleNamespace(name="slurm"))
    with pytest.raises(InputError) as err:
        check_executor(slurm, which=lambda _command: None)
    assert str(err.value) == (
        "--executor slurm: this host has no sbatch, squeue, scancel: Slurm's client commands are not installed "
        "here. Fix: run from a host of the cluster (its login node), or run locally without the slurm profile "
        "(snakemake all --cores N)"
    )
    check_executor(slurm, which=lambda command: f"/usr/bin/{command}")
    check_executor(SimpleNamespace(executor_plugin=SimpleNamespace(name="local")), which=lambda _command: None)
