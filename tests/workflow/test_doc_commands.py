"""Every command of the README and the docs runs as printed (issue 61).

Each shell command in a code block of ``README.md`` and ``docs/**/*.md`` (fenced or indented,
continuation lines joined) is run in one temporary copy of the working tree, page by page, in the
order printed, so a config a page writes is there for the page's next command:

- ``make TARGET``: as its dry run (``make -n``), which expands the target's recipe;
- ``.venv/bin/python -m clinsent new-config ...``: as printed (its ``--out`` made afresh);
- ``.venv/bin/python -m clinsent embed|search ...``: as printed, a tiny BERT standing in for a
  ``--model`` no page trained (the search recipe of ``docs/after-training.md``);
- ``.venv/bin/snakemake ...`` (alone or after ``python -m clinsent warm --``): as its dry run
  (``-n``, with ``placeholders_ok=true``, since it needs the user's data, a GPU or a cluster); a
  config file no page wrote is the demo's; a command that only unlocks runs as printed. Dry runs
  of the same DAG (the same config, targets and profile; ``--cores`` and ``--resources`` aside)
  start Snakemake once.
- A command the test cannot run at all says why in the docs, on its line: ``(not run by the
  commands test: <why>)``.

Every command calls the installed tools one way: through ``.venv/bin/`` (or ``make``), as the
README's set-up installs them.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from testkit import sentence_model

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
START = re.compile(
    r"^(\.venv/bin/|make |python3? |snakemake |pip |sudo |mkdocs |pytest |tensorboard |sbatch |squeue )"
)
MARKER = re.compile(r"\(not run by the commands test: ([^)]+)\)")
BIN = ".venv/bin/"


def code_lines(page: Path) -> list[tuple[int, str]]:
    """(line number, text) of every line in a code block: fenced, or indented after a blank line."""
    out: list[tuple[int, str]] = []
    fence: str | None = None
    prev_blank, prev_code = True, False
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), start=1):
        stripped = line.strip()
        if fence is None and re.match(r"^\s*(```|~~~)", line):
            fence, prev_code = stripped[:3], False
            continue
        if fence is not None:
            if stripped.startswith(fence):
                fence = None
            else:
                out.append((number, line))
            continue
        code = bool(re.match(r"^( {4}|\t)", line)) and (prev_blank or prev_code) and bool(stripped)
        if code:
            out.append((number, line))
        prev_code, prev_blank = code, not stripped
    return out


def commands(page: Path) -> list[tuple[int, str]]:
    """(line, command) of each shell command of a page, continuation lines joined."""
    found: list[tuple[int, str]] = []
    open_: list[object] | None = None
    for number, line in code_lines(page):
        text = line.strip()
        if open_ is not None:
            open_[1] = f"{open_[1]} {text.rstrip(chr(92)).strip()}"
            if not text.endswith("\\"):
                found.append((int(str(open_[0])), str(open_[1])))
                open_ = None
            continue
        if START.match(text):
            if text.endswith("\\"):
                open_ = [number, text.rstrip("\\").strip()]
            else:
                found.append((number, text))
    return found


EVERY = [(page, number, command) for page in PAGES for number, command in commands(page)]


def _words(command: str) -> list[str]:
    return shlex.split(command, comments=True)


def test_the_commands_are_found_and_call_the_tools_one_way() -> None:
    assert len(EVERY) >= 30, len(EVERY)
    for page, number, command in EVERY:
        where = f"{page.relative_to(REPO)}:{number}"
        first = _words(command)[0]
        assert first in ("make", "sudo") or first.startswith(BIN), f"{where}: call the tool as {BIN}...: {command}"


def _dry_run(words: list[str], clone: Path) -> list[str] | None:
    """A snakemake command as its dry run (None: it runs as printed)."""
    args = words[1:]
    if args == ["--unlock"]:
        return None
    out, config, i = [words[0]], ["placeholders_ok=true"], 0
    while i < len(args):
        arg = args[i]
        if arg in ("--cores", "-c", "-j", "--jobs", "--resources"):  # how many jobs at once: not the DAG
            i += 2
        elif arg == "--config":
            i += 1
            while i < len(args) and not args[i].startswith("-"):
                config.append(args[i])
                i += 1
        elif arg == "--configfile" and i + 1 < len(args):
            name = args[i + 1]
            out += [arg, name if (clone / name).exists() else "config/config.yaml"]  # no page wrote it: the demo's
            i += 2
        else:
            out.append(arg)
            i += 1
    return [*out, *([] if "-n" in out else ["-n"]), "--config", *dict.fromkeys(config)]


@pytest.fixture(scope="module")
def clone(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The working tree as git sees it (tracked and untracked files, not the ignored ones), with
    the installed environment beside it."""
    root = tmp_path_factory.mktemp("docs-commands") / "clinsent"
    listed = subprocess.run(
        ["git", "-C", str(REPO), "ls-files", "-co", "--exclude-standard", "-z"], capture_output=True, check=True
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = REPO / name
        if source.is_file():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, root / name)
    (root / ".venv").symlink_to(REPO / ".venv")
    return root


@pytest.mark.workflow
def test_every_command_of_the_readme_and_the_docs_runs_as_printed(clone: Path, tiny_bert: Path) -> None:
    env = {**os.environ, "PATH": f"{clone / '.venv' / 'bin'}:{os.environ['PATH']}", "HF_HUB_OFFLINE": "1"}
    done: set[tuple[str, ...]] = set()
    failed, ran, marked = [], 0, 0
    for page, number, command in EVERY:
        where = f"{page.relative_to(REPO)}:{number}"
        if why := MARKER.search(command):
            assert why.group(1).strip(), where
            marked += 1
            continue
        words = _words(command)
        if words[:3] == [f"{BIN}python", "-m", "clinsent"] and words[3:4] == ["warm"]:
            words = words[words.index("--") + 1 :]  # the warm start runs the command after --
        if words[0] == "make":
            run = ["make", "-n", *words[1:]]
        elif words[0] == f"{BIN}snakemake":
            dry = _dry_run(words, clone)
            run = dry if dry is not None else words
            key = tuple(run)
            if key in done:
                continue
            done.add(key)
        elif words[:3] == [f"{BIN}python", "-m", "clinsent"] and words[3:4] in (["embed"], ["search"]):
            model = clone / words[words.index("--model") + 1]
            if not model.exists():  # a trained run no page made: the tiny BERT stands in
                sentence_model(tiny_bert, model)
            run = words
        elif words[:4] == [f"{BIN}python", "-m", "clinsent", "new-config"]:
            out = words[words.index("--out") + 1]
            (clone / out).unlink(missing_ok=True)  # a fresh user has none yet
            run = words
        else:
            failed.append(f"{where}: the test does not know how to run it: {command}")
            continue
        done_run = subprocess.run(run, cwd=clone, env=env, capture_output=True, text=True, timeout=600)
        ran += 1
        if done_run.returncode != 0:
            tail = (done_run.stderr or done_run.stdout).strip().splitlines()[-3:]
            failed.append(f"{where}: {' '.join(run)}\n    " + "\n    ".join(tail))
    assert not failed, "commands that fail as printed:\n" + "\n".join(failed)
    assert ran >= 15 and marked >= 4, (ran, marked)


WARM = f"{BIN}python -m clinsent warm -- {BIN}snakemake all "


def _local_runs() -> list[tuple[str, str]]:
    """(where, text) of every full local run the docs, the README, the configs' headers and
    new-config's header print: a snakemake command with --cores, not a dry run or a profile's."""
    found = [(f"{p.relative_to(REPO)}:{n}", c) for p, n, c in EVERY]
    for path in [*sorted((REPO / "config").rglob("*.yaml")), REPO / "src/clinsent/commands/new_config.py"]:
        for n, line in enumerate(path.read_text().splitlines(), start=1):
            if "snakemake" in line and "--cores" in line:
                found.append((f"{path.relative_to(REPO)}:{n}", line.split("#", 1)[-1].strip().strip('",')))
    return [
        (w, c)
        for w, c in found
        if "snakemake" in c and "--cores" in c and " -n" not in c and "--profile" not in c and "make " not in c[:5]
    ]


def test_one_run_command_is_recommended_everywhere() -> None:
    """A full local run is printed one way (issue 74): through the warm interpreter, the
    Makefile's way, wherever the docs, the README or a config's header print one."""
    runs = _local_runs()
    assert len(runs) >= 10, runs
    for where, command in runs:
        text = re.sub(r"^\d+\.\s+", "", command.split("(or: ", 1)[-1])  # "3. .venv/..." in a numbered list
        assert text.startswith(WARM), f"{where}: print the run as {WARM}...: {command}"
