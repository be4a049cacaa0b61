"""A warm interpreter for many short jobs: the heavy libraries imported once, each job forked from it.

Why: at demo scale a job's own work takes a second or two, while starting Python and importing
torch, transformers, sentence-transformers, scikit-learn and SciPy takes 8-12 s of CPU on a
two-core machine (``from transformers import BertModel`` alone: 8.7 s, most of it transformers
scanning its own source tree for its lazy imports). A demo twin of 60 jobs spends two thirds of
its CPU importing (docs/performance.md). ``python -m clinsent warm -- COMMAND`` starts one server
that imports them (:data:`PRELOAD`), runs COMMAND with ``CLINSENT_WARM`` naming the server's
socket, and stops the server when COMMAND ends. A job script's first statement,
:func:`hand_off`, sends the job to the server (its script, working folder, environment, umask,
``sys.path``, arguments and its three standard streams); the server forks a child that runs the
script as ``__main__`` while the job's own process waits, forwards any signal it gets to the
child, and exits with the child's status. A job whose process dies kills its child.

Nothing a job computes changes: the same script runs with the same inputs, environment, working
folder and threads; only the imports are already done. Snakemake's ``benchmark:`` file of a warm
job records the waiting process's CPU time and memory, not the child's (its wall time is right):
measure resources without the server. A job runs in its own process, as without a server, when
``CLINSENT_WARM`` is unset (the default) or names no live server, inside a Slurm job (its work
belongs to its allocation), when the server runs another Python or another copy of this package,
and in the download jobs (they turn the hub on for their own process, which an interpreter that
imported the hub offline cannot).

Why not a library: multiprocessing's forkserver serves only its own parent; Snakemake starts
every job as a new process.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import json
import os
import runpy
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import FrameType
from typing import Any

import clinsent

ENV = "CLINSENT_WARM"  # the socket of the server a job hands itself to
# what the job scripts import that takes seconds (torch and the libraries above it); our own
# modules come with them
PRELOAD = (
    "torch",
    "transformers.models.bert.modeling_bert",
    "sentence_transformers",
    "sklearn.linear_model",
    "sklearn.metrics",
    "scipy.stats",
    "pandas",
    "pyarrow.parquet",
    "threadpoolctl",
    "clinsent.train.trainer",
    "clinsent.embedding.vectors",
    "clinsent.evaluation.bootstrap",
    "clinsent.methods.config",
    "clinsent.tasks.config",
)
FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2)
READY_TIMEOUT_S = 300.0
_in_child = False  # set in a forked child: its script's own hand_off() runs it here


def _identity() -> dict[str, str]:
    """What must match between a job and the server: the Python and the copy of this package."""
    return {"python": os.path.realpath(sys.executable), "package": os.path.realpath(clinsent.__file__)}


def _send(sock: socket.socket, payload: dict[str, Any], fds: Sequence[int]) -> None:
    """``payload`` (length-prefixed JSON) with the file descriptors ``fds`` passed alongside."""
    data = json.dumps(payload).encode()
    framed = struct.pack("!I", len(data)) + data
    sent = socket.send_fds(sock, [framed], list(fds))
    sock.sendall(framed[sent:])


def _recv_exact(sock: socket.socket, n: int, head: bytes = b"") -> bytes:
    data = head
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError("the warm interpreter's connection closed mid-message")
        data += chunk
    return data


def _recv_request(sock: socket.socket) -> tuple[dict[str, Any], list[int]]:
    first, fds, _flags, _addr = socket.recv_fds(sock, 65536, 3)
    head = _recv_exact(sock, 4, first[:4])
    size = struct.unpack("!I", head[:4])[0]
    body = _recv_exact(sock, size, first[4:])
    return json.loads(body[:size]), list(fds)


# --- the job's side -------------------------------------------------------------------------


def hand_off() -> None:
    """Run the calling job script in the warm interpreter named by ``CLINSENT_WARM``, if one
    serves it, and exit with its status; otherwise return, and the script runs here."""
    path = os.environ.get(ENV)
    if not path or _in_child or "SLURM_JOB_ID" in os.environ:
        return
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(path)
    except OSError:
        sock.close()
        return  # no server (it stopped, or never started): the job runs in this process
    umask = os.umask(0o077)
    os.umask(umask)
    main = sys.modules["__main__"]  # Snakemake's preamble points __file__ at the rule's script
    script = os.path.abspath(str(getattr(main, "__real_file__", None) or getattr(main, "__file__", sys.argv[0])))
    request = {
        **_identity(),
        "script": script,
        "argv": [script, *sys.argv[1:]],
        "cwd": os.getcwd(),
        "env": dict(os.environ),
        "umask": umask,
        "sys_path": list(sys.path),
    }
    with sock:
        _send(sock, request, fds=(0, 1, 2))
        reader = sock.makefile("rb")
        answer = reader.readline().decode().strip()
        if answer != "OK":
            return  # another Python or package copy serves: the job runs in this process
        _forward_signals(sock)
        status = reader.readline().decode().split()
    if status[:1] == ["EXIT"]:
        raise SystemExit(int(status[1]))
    _die_like_the_child()


_last_signal: list[int] = []


def _forward_signals(sock: socket.socket) -> None:
    def forward(signum: int, _frame: FrameType | None) -> None:
        _last_signal.append(signum)
        with contextlib.suppress(OSError):
            sock.sendall(f"SIG {signum}\n".encode())

    for signum in FORWARDED:
        signal.signal(signum, forward)


def _die_like_the_child() -> None:
    """The child ended without a status (a signal killed it): end the same way, so Snakemake
    sees what it would have seen."""
    if _last_signal:
        signal.signal(_last_signal[-1], signal.SIG_DFL)
        os.kill(os.getpid(), _last_signal[-1])
    print("the job's warm child ended without a status (killed)", file=sys.stderr)
    raise SystemExit(1)


# --- the server's side ----------------------------------------------------------------------


def _child(conn: socket.socket) -> int:
    """In a forked child: take the job's streams, folder and environment, run its script."""
    global _in_child
    _in_child = True
    for signum in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2):
        signal.signal(signum, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    request, fds = _recv_request(conn)
    if {k: request.get(k) for k in _identity()} != _identity() or len(fds) != 3:
        for fd in fds:
            os.close(fd)
        conn.sendall(b"NO\n")
        return 0
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    os.umask(request["umask"])
    _thread_limits(request["env"])
    sys.path[:] = request["sys_path"]
    sys.argv = request["argv"]
    conn.sendall(b"OK\n")
    done = threading.Event()
    threading.Thread(target=_watch, args=(conn, done), daemon=True).start()
    code = _run_script(request["script"])
    done.set()
    conn.sendall(f"EXIT {code}\n".encode())
    return code


def _thread_limits(env: dict[str, str]) -> None:
    """The thread counts the job's environment asks for (Snakemake sets ``OMP_NUM_THREADS``,
    ``OPENBLAS_NUM_THREADS`` and the like to the rule's threads): a library reads them when it
    loads, which in a forked child was in the server, so they are applied here. Without them a
    job's BLAS runs on every core whatever its rule's threads, and jobs running side by side
    contend (a scikit-learn MLP probe took 144 s instead of 4)."""
    from threadpoolctl import threadpool_limits

    blas = env.get("OPENBLAS_NUM_THREADS") or env.get("MKL_NUM_THREADS") or env.get("OMP_NUM_THREADS")
    omp = env.get("OMP_NUM_THREADS")
    if blas and blas.isdigit():
        threadpool_limits(limits=int(blas), user_api="blas")
    if omp and omp.isdigit():
        threadpool_limits(limits=int(omp), user_api="openmp")
        if "torch" in sys.modules:
            sys.modules["torch"].set_num_threads(int(omp))


def _watch(conn: socket.socket, done: threading.Event) -> None:
    """Deliver the signals the job's process forwards; die with it if it dies."""
    for line in conn.makefile("rb"):
        words = line.decode().split()
        if words[:1] == ["SIG"]:
            os.kill(os.getpid(), int(words[1]))
    if not done.is_set():
        os.kill(os.getpid(), signal.SIGKILL)


def _run_script(script: str) -> int:
    code = 0
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as exc:
        if isinstance(exc.code, int) or exc.code is None:
            code = exc.code or 0
        else:
            print(exc.code, file=sys.stderr)
            code = 1
    except BaseException:  # noqa: BLE001 - reported as an uncaught exception would be
        sys.excepthook(*sys.exc_info())
        code = 1
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    return code


def serve(path: Path, preload: Sequence[str] = PRELOAD) -> None:
    """Import ``preload``, then fork a child per job connecting to the socket ``path`` (owner-only),
    until SIGTERM, until the socket is removed or until the process that started this one ends."""
    parent = os.getppid()
    for name in preload:
        importlib.import_module(name)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        listener.bind(str(path))
    finally:
        os.umask(old)
    listener.listen(64)
    listener.settimeout(1.0)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the kernel
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    while os.getppid() == parent and path.exists():
        try:
            conn, _ = listener.accept()
        except TimeoutError:
            continue
        if os.fork() == 0:
            listener.close()
            conn.settimeout(None)
            code = 1
            try:
                code = _child(conn)
            finally:
                os._exit(code)
        conn.close()


@contextlib.contextmanager
def server(
    preload: Sequence[str] = PRELOAD, timeout_s: float = READY_TIMEOUT_S, say: Any = None, every: float = 10.0
) -> Iterator[Path]:
    """A server in a subprocess for the ``with`` block; yields its socket once it accepts jobs.
    ``say``: where a line goes every ``every`` seconds while it imports, and once it is ready."""
    folder = Path(tempfile.mkdtemp(prefix="clinsent-warm-"))  # owner-only; short (socket paths: 107 bytes)
    path = folder / "socket"
    proc = subprocess.Popen(
        [sys.executable, "-m", "clinsent", "warm", "--preload", ",".join(preload), "--serve", str(path)]
    )
    try:
        started = time.monotonic()
        deadline, next_line = started + timeout_s, started + every
        while not path.exists():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the warm interpreter did not start (exit status {proc.poll()})")
            if say is not None and time.monotonic() >= next_line:
                say(f"warm: still importing ({time.monotonic() - started:.0f} s)")
                next_line += every
            time.sleep(0.1)
        if say is not None:
            say(f"warm: ready in {time.monotonic() - started:.0f} s; every job of the command starts from it")
        yield path
    finally:
        proc.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=30)
        shutil.rmtree(folder, ignore_errors=True)


def _importable(name: str) -> bool:
    """Whether ``name`` is a module this interpreter can import (found, not imported)."""
    import importlib.util

    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):  # its parent package is missing, or the name is not a module name
        return False


def main(argv: list[str]) -> int:
    """``python -m clinsent warm [--preload MODULE,...] -- COMMAND ...``: COMMAND with a warm
    interpreter serving its jobs (``--preload``: the modules it imports, :data:`PRELOAD` unless given)."""
    preload = list(PRELOAD)
    if argv[:1] == ["--preload"] and len(argv) > 1:
        preload, argv = [name for name in argv[1].split(",") if name], argv[2:]
    if argv[:1] == ["--serve"] and len(argv) > 1:
        serve(Path(argv[1]), preload)
        return 0
    usage = (
        "usage: python -m clinsent warm [--preload MODULE,...] -- COMMAND [ARG ...]\n"
        "Runs COMMAND (e.g. .venv/bin/snakemake all --cores 2) with its jobs forked from one interpreter "
        "that has imported torch and transformers once."
    )
    if argv[:1] in (["-h"], ["--help"]):  # before --: the command's own flags come after it
        print(usage)
        return 0
    command = argv[1:] if argv[:1] == ["--"] else argv
    if not command:
        print(usage, file=sys.stderr)
        return 2
    if shutil.which(command[0]) is None:
        print(f"warm: {command[0]}: no such command. Fix: give the command to run after --", file=sys.stderr)
        return 2
    if missing := [name for name in preload if not _importable(name)]:  # before the server starts
        print(
            f"warm: --preload: no module named {missing[0]!r} in this environment. Fix: name modules this "
            "interpreter can import (comma-separated), or leave --preload out for the default set",
            file=sys.stderr,
        )
        return 2
    say = lambda line: print(line, flush=True)  # noqa: E731
    heavy = ", ".join(name.split(".")[0] for name in preload[:3])
    say(f"warm: importing {heavy} and {len(preload) - 3} more once (a line every 10 s until ready), then {command[0]}")
    with server(preload, say=say) as path:
        return subprocess.call(command, env={**os.environ, ENV: str(path)})
