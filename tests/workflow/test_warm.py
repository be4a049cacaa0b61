"""The warm interpreter (clinsent.runner.warm): a job handed to it runs as it would in its own process
(status, streams, folder, environment, arguments, umask), in a child of the server, gets the
signals its process gets, dies with it, and runs in its own process where no server serves it.

The server here preloads numpy alone, so each test takes a second.
"""

from __future__ import annotations

import ast
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from clinsent.runner import warm

REPO = Path(__file__).resolve().parents[2]
JOB = '''"""a job"""
from clinsent.runner.warm import hand_off

hand_off()
import os, signal, sys, time
print(os.getpid(), os.getppid(), os.getcwd(), os.environ.get("JOB_VALUE"), oct(os.umask(0)), sys.argv[1:], flush=True)
print("to stderr", file=sys.stderr, flush=True)
if sys.argv[1] == "wait":
    signal.signal(signal.SIGTERM, lambda *_: (print("checkpoint on TERM", flush=True), sys.exit(7)))
    print("waiting", flush=True)  # the handler is in place
    time.sleep(60)
if sys.argv[1] == "threads":
    import numpy
    from threadpoolctl import threadpool_info
    print([i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"], flush=True)
if sys.argv[1] == "raise":
    raise ValueError("row 3, column text: bad")
sys.exit(int(sys.argv[1]) if sys.argv[1].isdigit() else 0)
'''


@pytest.fixture(scope="module")
def served() -> Iterator[Path]:
    with warm.server(preload=["numpy"]) as path:  # numpy's BLAS loads in the server
        yield path


@pytest.fixture()
def job(tmp_path: Path) -> Path:
    (tmp_path / "job.py").write_text(JOB)
    (tmp_path / "work").mkdir()
    return tmp_path / "job.py"


def _env(served: Path | None, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != warm.ENV and not k.startswith("SLURM_")}
    return {**env, **({warm.ENV: str(served)} if served else {}), "JOB_VALUE": "seen", **extra}


def _run(job: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(job), *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=job.parent / "work",
        timeout=60,
        preexec_fn=lambda: os.umask(0o027),
    )


def _fields(run: subprocess.CompletedProcess[str]) -> list[str]:
    return run.stdout.splitlines()[0].split(" ", 5)


def test_a_handed_job_runs_in_a_child_of_the_server_as_in_its_own_process(served: Path, job: Path) -> None:
    run = _run(job, _env(served), "3", "--flag")
    pid, ppid, cwd, value, umask, argv = _fields(run)
    assert run.returncode == 3 and run.stderr.strip() == "to stderr"
    assert (cwd, value, umask, ast.literal_eval(argv)) == (str(job.parent / "work"), "seen", "0o27", ["3", "--flag"])
    assert int(ppid) != os.getpid()  # forked by the server, not started by us
    cold = _run(job, _env(None), "0")
    assert cold.returncode == 0 and int(_fields(cold)[1]) == os.getpid()


def test_a_job_gets_the_blas_threads_its_environment_asks_for(served: Path, job: Path) -> None:
    """Snakemake sets OPENBLAS_NUM_THREADS to the rule's threads; numpy loaded in the server read
    the server's environment, so the child applies the job's."""
    for threads in ("1", "2"):
        run = _run(job, _env(served, OPENBLAS_NUM_THREADS=threads, OMP_NUM_THREADS=threads), "threads")
        assert run.returncode == 0 and run.stdout.splitlines()[1] == f"[{threads}]", run.stdout + run.stderr


def test_an_uncaught_exception_fails_the_job_with_its_traceback(served: Path, job: Path) -> None:
    run = _run(job, _env(served), "raise")
    assert run.returncode == 1 and "ValueError: row 3, column text: bad" in run.stderr


def test_a_signal_to_the_job_reaches_its_child(served: Path, job: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, str(job), "wait"],
        stdout=subprocess.PIPE,
        text=True,
        env=_env(served),
        cwd=job.parent / "work",
    )
    assert proc.stdout is not None
    proc.stdout.readline()
    assert proc.stdout.readline().strip() == "waiting"
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 7 and proc.stdout.read().strip() == "checkpoint on TERM"


def test_a_child_dies_with_its_job(served: Path, job: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, str(job), "wait"],
        stdout=subprocess.PIPE,
        text=True,
        env=_env(served),
        cwd=job.parent / "work",
    )
    assert proc.stdout is not None
    child = int(proc.stdout.readline().split()[0])
    assert child != proc.pid
    proc.kill()
    proc.wait(timeout=30)
    deadline = time.monotonic() + 10
    while _alive(child):
        assert time.monotonic() < deadline, "the child outlived its job"
        time.sleep(0.1)


def _alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie awaiting its reaper has died); it may vanish while we read."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


def test_no_server_a_slurm_job_or_another_python_runs_the_job_in_its_own_process(
    served: Path, job: Path, tmp_path: Path
) -> None:
    for env in (_env(tmp_path / "nothing-serves-here"), _env(served, SLURM_JOB_ID="12")):
        run = _run(job, env, "0")
        assert run.returncode == 0 and int(_fields(run)[1]) == os.getpid()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:  # a job from another interpreter
        sock.connect(str(served))
        warm._send(sock, {"python": "/another/python", "package": "elsewhere"}, fds=(0, 1, 2))
        assert sock.makefile("rb").readline() == b"NO\n"


def test_the_socket_is_the_owners_alone(served: Path) -> None:
    assert served.stat().st_mode & 0o077 == 0 and served.parent.stat().st_mode & 0o077 == 0


def test_the_command_form_serves_its_command_and_stops() -> None:
    code = "import os; print(os.environ['CLINSENT_WARM'])"
    command = [sys.executable, "-m", "clinsent", "warm", "--preload", "json", "--", sys.executable, "-c", code]
    run = subprocess.run(command, capture_output=True, text=True, timeout=300, env=_env(None))
    assert run.returncode == 0
    assert not Path(run.stdout.strip()).exists()  # stopped and removed once the command ended


def test_every_job_script_starts_one_way() -> None:
    """A script is a docstring, ``main(smk, log)`` (its imports inside, so the cold process hands
    off before importing torch) and ``run(snakemake, main)`` (clinsent.runner.script: the warm hand-off,
    logging, the GPU slot); the download jobs turn the hub on for their own process: never warm."""
    for script in sorted((REPO / "workflow" / "scripts").glob("*.py")):
        body = ast.parse(script.read_text()).body[1:]
        imports = [ast.unparse(n) for n in body if isinstance(n, ast.Import | ast.ImportFrom)]
        assert imports == [
            "from logging import Logger",
            "from typing import Any",
            "from clinsent.runner.script import run",
        ]
        assert [type(n).__name__ for n in body[len(imports) :]] == ["FunctionDef", "Expr"], script.name
        warm = "" if not script.stem.startswith("download_") else ", warm=False"
        assert ast.unparse(body[-1]) == f"run(snakemake, main{warm})", script.name


def test_a_preload_of_a_missing_module_is_one_line_before_any_server() -> None:
    """Issue 83: `warm --preload` of a module that is not there was the server's traceback. Now one
    line naming it, exit 2, before anything starts."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "clinsent", "warm", "--preload", "json,no_such_module_here", "--", "true"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and done.stdout == "", (done.stdout, done.stderr)
    assert done.stderr.strip() == (
        "warm: --preload: no module named 'no_such_module_here' in this environment. Fix: name modules this "
        "interpreter can import (comma-separated), or leave --preload out for the default set"
    )
