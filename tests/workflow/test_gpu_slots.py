"""One GPU per job (clinsent.gpu.slots), on a machine without GPUs: the pool is device indices,
allocated the same way whether or not CUDA exists. Concurrent jobs never hold one slot at once,
a killed job's slot is free again at once, a scheduler's choice is kept, and a job that declares
no GPU sees none."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from clinsent.errors import InputError
from clinsent.gpu.pool import EXPLICIT_ENV, POOL_ENV, VISIBLE, detect_devices, resolve_pool
from clinsent.gpu.slots import LOCK_DIR_ENV, SLOT_ENV, acquire, take_slot, try_lock

HOLD = """
import json, os, sys, time
from clinsent.gpu.slots import take_slot
slot = take_slot(True, log=lambda _line: None, poll=0.02)
start = time.time()
print("held", flush=True)
time.sleep(float(sys.argv[1]))
print(json.dumps({"slot": slot.device, "visible": os.environ["CUDA_VISIBLE_DEVICES"], "start": start,
                  "end": time.time()}), flush=True)
"""


def _env(tmp_path: Path, pool: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != VISIBLE}
    return {**env, POOL_ENV: pool, EXPLICIT_ENV: "1", LOCK_DIR_ENV: str(tmp_path / "locks"), **extra}


def test_the_pool_is_the_configs_indices_among_the_visible_devices() -> None:
    none: dict[str, str] = {}
    assert resolve_pool(None, {VISIBLE: "2,3"}) == ["2", "3"]
    assert resolve_pool(None, none, detect=lambda: 2) == ["0", "1"]
    assert resolve_pool("auto", {VISIBLE: "-1"}) == []
    assert resolve_pool([1], {VISIBLE: "GPU-aa,GPU-bb"}) == ["GPU-bb"]
    assert resolve_pool([0, 1], none, detect=lambda: 0) == ["0", "1"]  # a CPU machine: slots as indices
    assert resolve_pool("0,1", none, detect=lambda: 4) == ["0", "1"] and resolve_pool([], none) == []
    for gpus, env, message in (
        ([2], {VISIBLE: "4,5"}, r"gpus: index 2 is beyond the 2 device\(s\)"),
        ([0, 4], none, r"gpus: device 4 is not among the 2 GPUs"),
        ([0, 0], none, r"gpus\[1\]: device 0 is listed twice"),
        (["x"], none, r"gpus\[0\]: is not a device index"),
        ({"a": 1}, none, r"gpus: a value of type dict"),
    ):
        with pytest.raises(InputError, match=message):
            resolve_pool(gpus, env, detect=lambda: 2)


def test_devices_are_counted_without_cuda(tmp_path: Path) -> None:
    for bus in ("0000:01:00.0", "0000:02:00.0", "0000:03:00.0"):
        (tmp_path / "gpus" / bus).mkdir(parents=True)
    assert detect_devices(tmp_path / "gpus") == 3
    listed = "GPU 0: NVIDIA H100 (UUID: GPU-a)\nGPU 1: NVIDIA H100 (UUID: GPU-b)\n"
    assert detect_devices(tmp_path / "none", run=lambda *_a, **_k: type("R", (), {"stdout": listed})()) == 2

    def missing(*_a: Any, **_k: Any) -> Any:
        raise FileNotFoundError("nvidia-smi")

    assert detect_devices(tmp_path / "none", run=missing) == 0


def test_concurrent_jobs_never_share_a_slot(tmp_path: Path) -> None:
    """Six jobs on a pool of two slots: both slots are used, no slot is held by two at once, and
    each job's CUDA_VISIBLE_DEVICES is its slot."""
    env = _env(tmp_path, "0,1")
    procs = [
        subprocess.Popen([sys.executable, "-c", HOLD, "0.4"], env=env, stdout=subprocess.PIPE, text=True)
        for _ in range(6)
    ]
    runs = [json.loads(p.communicate(timeout=60)[0].splitlines()[-1]) for p in procs]
    assert {r["slot"] for r in runs} == {"0", "1"} and all(r["visible"] == r["slot"] for r in runs)
    for slot in ("0", "1"):
        spans = sorted((r["start"], r["end"]) for r in runs if r["slot"] == slot)
        assert all(a_end <= b_start for (_, a_end), (b_start, _) in zip(spans, spans[1:])), spans


def test_a_killed_jobs_slot_is_free_again_at_once(tmp_path: Path) -> None:
    env = _env(tmp_path, "0")
    holder = subprocess.Popen([sys.executable, "-c", HOLD, "600"], env=env, stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    assert try_lock(tmp_path / "locks", "0") is None  # taken
    holder.send_signal(signal.SIGKILL)
    holder.wait(timeout=30)
    t0 = time.monotonic()
    after = subprocess.run([sys.executable, "-c", HOLD, "0"], env=env, capture_output=True, text=True, timeout=60)
    assert json.loads(after.stdout.splitlines()[-1])["slot"] == "0" and time.monotonic() - t0 < 30


def test_a_job_waits_for_a_free_slot_and_says_so(tmp_path: Path) -> None:
    folder = tmp_path / "locks"
    held = try_lock(folder, "0")
    assert held is not None
    lines: list[str] = []

    def release(_seconds: float) -> None:  # the other job ends while this one waits
        held.close()

    slot = acquire(["0"], folder, lines.append, sleep=release)
    assert slot.device == "0" and len(lines) == 1 and "waiting for 1 free device of the pool 0" in lines[0]
    slot.release()


def test_a_job_of_several_processes_takes_its_devices_all_or_none(tmp_path: Path) -> None:
    """Two devices of a pool of three: the free ones, together; while only one is free it holds
    none (two such jobs never hold one each and wait for the other); more than the pool is refused."""
    folder = tmp_path / "locks"
    held = try_lock(folder, "1")
    assert held is not None
    slot = acquire(["0", "1", "2"], folder, count=2)
    assert slot.device == "0,2" and slot.devices == ["0", "2"]
    slot.release()
    other = try_lock(folder, "2")
    assert other is not None
    seen: list[bool] = []

    def meanwhile(_seconds: float) -> None:  # while it waits, device 0 is not kept from others
        probe = try_lock(folder, "0")
        seen.append(probe is not None)
        if probe is not None:
            probe.close()
        held.close()

    lines: list[str] = []
    slot = acquire(["0", "1", "2"], folder, lines.append, sleep=meanwhile, count=2)
    assert seen == [True] and slot.device == "0,1" and "waiting for 2 free devices" in lines[0]
    slot.release()
    other.close()
    with pytest.raises(InputError, match="asks for 4 devices and the pool has 3"):
        acquire(["0", "1", "2"], folder, count=4)
    env = {POOL_ENV: "0,1,2,3", EXPLICIT_ENV: "0", LOCK_DIR_ENV: str(folder), VISIBLE: "5,6"}
    kept = take_slot(2, env, lines.append)  # Slurm's --gpus=2: kept whole, no lock
    assert kept.device == "5,6" and env[VISIBLE] == "5,6" and lines[-1].startswith("gpu slots: 5,6 (chosen by")


def test_a_schedulers_choice_is_kept_and_a_cpu_job_sees_no_gpu(tmp_path: Path) -> None:
    lines: list[str] = []
    env = {POOL_ENV: "0,1", EXPLICIT_ENV: "0", LOCK_DIR_ENV: str(tmp_path / "locks"), VISIBLE: "3"}
    slot = take_slot(True, env, lines.append)
    assert slot.device == "3" and env[VISIBLE] == "3" and not (tmp_path / "locks").exists()  # no lock taken
    assert (
        lines == ["gpu slot: 3 (chosen by the scheduler: CUDA_VISIBLE_DEVICES=3)"]
        and env[SLOT_ENV] == "3 (chosen by the scheduler: CUDA_VISIBLE_DEVICES=3)"
    )
    cpu = {POOL_ENV: "0,1", VISIBLE: "0,1"}
    assert take_slot(False, cpu, lines.append).device is None and cpu[VISIBLE] == ""
    assert lines[-1] == "gpu slot: none (the rule declares no gpu: the job runs on the CPU)"
    nothing = {POOL_ENV: "", EXPLICIT_ENV: "1"}
    assert take_slot(True, nothing, lines.append).device is None and nothing[VISIBLE] == ""
    assert lines[-1] == "gpu slot: none (gpus: [] in the config)"
    found: dict[str, str] = {POOL_ENV: "", EXPLICIT_ENV: "0"}
    take_slot(True, found, lines.append)
    assert VISIBLE not in found and lines[-1] == "gpu slot: none (no GPU was found when the workflow was planned)"
    outside: dict[str, str] = {}
    take_slot(True, outside, lines.append)
    assert VISIBLE not in outside and lines[-1] == "gpu slot: none (no pool: the job was not started by the workflow)"
