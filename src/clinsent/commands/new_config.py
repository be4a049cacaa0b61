"""``python -m clinsent new-config PAPER --out my.yaml [--set key=value ...]``: a user's own config
for one of the five papers, the demo, the benchmark, or ``own`` (your notes and your eval files on
no paper: ``config/own.yaml``), read on top of the tracked paper config
(:mod:`clinsent.door.overlay`), so the paper config is never edited and updates to it flow in.

The file states every user file the paper needs (the notes, the MedCAT pack, the eval sets'
files, ...) as a key marked ``REQUIRED``, holding the paper config's placeholder until set;
``--set notes.path=/data/NOTEEVENTS.csv.gz`` fills one (any other key may be set too: the value
is read as YAML). A dry run of the file names each file still missing with its key
(:func:`clinsent.plan.input_checks.check_user_files`). For the benchmark (``benchmark``), the files of an
eval set marked ``optional`` (the credentialed tasks; the notes behind the document tasks) are
marked ``OPTIONAL`` instead: left as they are, those tasks leave the DAG with one warning line."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from clinsent.errors import CommandParser, InputError
from clinsent.io.files import write_text
from clinsent.repository import ROOT
from clinsent.safety.places import check_output_file

REPO = ROOT
PAPERS = {
    "medse": "config/paper/medse.yaml",
    "augment": "config/paper/augment.yaml",
    "biosimcse": "config/paper/biosimcse.yaml",
    "clinical-nli": "config/paper/clinical-nli.yaml",
    "healthcare-lm": "config/paper/healthcare-lm.yaml",
    "demo": "config/config.yaml",
    "benchmark": "config/benchmark.yaml",
    "own": "config/own.yaml",
    "own-quick": "config/own-quick.yaml",
}


def required_files(paper: str) -> list[tuple[str, str]]:
    """(key, placeholder) of each user file of the paper's config that is not in the repository."""
    from clinsent.door.open import open_plan

    cwd = os.getcwd()
    os.chdir(REPO)  # the paper configs' own paths (e.g. config/icd9_triage.yaml) are from the repository
    try:
        plan = open_plan(PAPERS[paper], {"placeholders_ok": True})
        return [(k, p) for k, p in dict.fromkeys(plan.files.user_files()) if not os.path.exists(p)]
    finally:
        os.chdir(cwd)


def optional_keys(paper: str, keys: list[str]) -> set[str]:
    """The user-file keys of ``keys`` whose eval sets are all marked ``optional``: an optional set's
    own files, and the notes and document-task files when every set built from them is optional."""
    from clinsent.door.expansion import doc_task_sets
    from clinsent.door.overlay import fill_results, resolve_base
    from clinsent.io.safe_yaml import load_mapping

    config = fill_results(resolve_base(load_mapping(REPO / PAPERS[paper]), root=REPO))
    sets = config.get("eval_sets") or {}
    derived = doc_task_sets(config)
    notes_optional = bool(derived) and all(sets[name].get("optional") for name in derived)
    out = set()
    for key in keys:
        section, _, rest = key.partition(".")
        if section == "eval_sets" and (sets.get(rest.split(".")[0]) or {}).get("optional"):
            out.add(key)
        elif section in ("notes", "doc_tasks") and notes_optional:
            out.add(key)
    return out


def _parse_set(item: str) -> tuple[str, Any]:
    """``key=value`` of ``--set``: each part of the dotted key a name; the value kept as the text
    given (a ``#`` or ``: `` inside stays), except a number, true/false, null, or a flow list or
    mapping (``[0, 1]``), which YAML reads as such."""
    from clinsent.config.names import is_name

    key, sep, value = item.partition("=")
    key = key.strip()
    if not sep or not key:
        raise InputError("--set", "an item is not key=value", "write e.g. --set notes.path=/data/NOTEEVENTS.csv.gz")
    if not all(is_name(part) for part in key.split(".")):
        raise InputError(
            "--set",
            f"a key ({len(key)} characters) is not dotted names (letters, digits, _, - and .)",
            "write a config key, e.g. --set eval_sets.medsts_train.path=/data/train.txt",
        )
    return key, _value(value)


def _value(text: str) -> Any:
    from clinsent.io.safe_yaml import loads

    if not text.strip():
        return ""
    try:
        parsed = loads(text, "--set")
    except InputError:
        return text
    if parsed is None or isinstance(parsed, (bool, int, float)):
        return parsed
    if isinstance(parsed, (list, dict)) and text.lstrip()[:1] in "[{":
        return parsed
    try:
        return float(text) if text.strip().lower() not in ("nan", "inf", "-inf", "infinity") else text
    except ValueError:  # YAML reads 1e-5 as text (its floats need a dot); as given otherwise
        return text


def _nest(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    tree: dict[str, Any] = {}
    for key, value in pairs:
        node = tree
        parts = key.split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise InputError(f"--set {key}", f"{part} is set to a value and used as a section", "set one of them")
        node[parts[-1]] = value
    return tree


def tracked(path: Path) -> bool:
    """Whether git tracks ``path`` in this repository (False where git or the repository is absent)."""
    import subprocess

    resolved = path.resolve()
    if not resolved.is_relative_to(REPO):
        return False
    try:
        run = subprocess.run(
            ["git", "-C", str(REPO), "ls-files", "--error-unmatch", str(resolved.relative_to(REPO))],
            capture_output=True,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return run.returncode == 0


def check_overlay(text: str, base: str, values: dict[str, Any]) -> None:
    """The file to write reads back as written (every value as given) and, with its base, is a
    config the workflow accepts: every key known (an unknown one gets the closest match), every
    knob valid; before anything is written."""
    import copy

    from clinsent.door.open import open_plan
    from clinsent.io.safe_yaml import loads

    written = loads(text, "the config to write")
    if written != {"base": base, **_nest(list(values.items()))}:
        raise InputError("new-config", "a value would not read back as given", "report this; write the file by hand")
    cwd = os.getcwd()
    os.chdir(REPO)  # the paper config's own paths are from the repository; the user's files need not exist yet
    try:
        open_plan({**copy.deepcopy(written), "placeholders_ok": True})
    finally:
        os.chdir(cwd)


def cost_lines(config: str) -> list[str]:
    """The ``# Cost:`` comment blocks of a config and of its bases, nearest first: what its settings
    cost, declared once beside them and copied to the top of every config written on it."""
    from clinsent.io.safe_yaml import load_mapping

    out: list[str] = []
    seen: set[str] = set()
    path: str | None = config
    while path and path not in seen:
        seen.add(path)
        lines = (REPO / path).read_text(encoding="utf-8").splitlines()
        block = False
        for line in lines:
            if line.startswith("# Cost:"):
                block = True
            elif block and not line.startswith("#   "):
                block = False
            if block:
                out.append(line)
        base = load_mapping(REPO / path).get("base")
        path = str(base) if base else None
    return out


def render(
    paper: str,
    base: str,
    values: dict[str, Any],
    required: dict[str, str],
    optional: set[str] | None = None,
    out: str = "THIS_FILE",
) -> str:
    """The overlay's YAML: what the settings cost (:func:`cost_lines`), how to run it, ``base``,
    then every key (nested), each value written by the YAML library, a REQUIRED (or, for an
    optional eval set's, OPTIONAL) mark on user files not set."""
    optional = optional or set()
    lines = [
        f"# Your {paper} run: {base} (tracked, never edited) with your own files on top.",
        *cost_lines(base),
        "# Keys marked REQUIRED still hold the paper config's placeholder: set each to your copy",
        "# (or rerun new-config with --set KEY=PATH). Then:",
        f"#   .venv/bin/snakemake all --configfile {out} -n        # a dry run names any file still missing",
        f"#   .venv/bin/python -m clinsent warm -- .venv/bin/snakemake all --configfile {out} --cores 2 "
        "--resources gpu=1",
        f"#   .venv/bin/snakemake all --configfile {out} --profile profiles/slurm",
        _dump({"base": base}),
    ]

    def emit(tree: dict[str, Any], prefix: str, indent: int) -> None:
        for key, value in tree.items():
            dotted = f"{prefix}{key}"
            if isinstance(value, dict) and value:
                lines.append(f"{' ' * indent}{_dump(key)}:")
                emit(value, f"{dotted}.", indent + 2)
                continue
            unset = dotted in required and value == required[dotted]
            mark = (
                "  # OPTIONAL: your file, or leave it and the task leaves the DAG"
                if unset and dotted in optional
                else "  # REQUIRED: your file (the paper config's placeholder)"
                if unset
                else ""
            )
            lines.append(f"{' ' * indent}{_dump({key: value})}{mark}")

    emit(_nest(list(values.items())), "", 0)
    return "\n".join(lines) + "\n"


def _dump(data: Any) -> str:
    """One line of YAML for ``data`` (a key, or a one-entry mapping), quoted where YAML needs it."""
    import yaml

    text = yaml.safe_dump(data, default_flow_style=True, allow_unicode=True, width=1 << 20, sort_keys=False)
    text = text.strip().removesuffix("...").strip()
    return text[1:-1] if isinstance(data, dict) else text  # {key: value} without its braces


def main(argv: list[str] | None = None) -> int:
    parser = CommandParser(prog="python -m clinsent new-config", description=__doc__.splitlines()[0])
    parser.add_argument("paper", choices=sorted(PAPERS))
    parser.add_argument("--out", required=True, help="the config to write (outside config/paper/)")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a key of the config, dotted (notes.path, eval_sets.medsts_train.path); repeatable",
    )
    parser.add_argument("--force", action="store_true", help="overwrite --out if it exists")
    args = parser.parse_args(argv)
    out = Path(args.out)
    try:
        check_output_file(out, "--out")  # the places rule every output keeps (clinsent.safety.places)
        if out.is_dir():
            raise InputError(out, "is a folder", "give --out the config file to write, e.g. --out my-config.yaml")
        if out.exists() and not args.force:
            raise InputError(out, "exists", "choose another --out, or add --force to overwrite it")
        if out.resolve().is_relative_to(REPO / "config") or tracked(out):
            raise InputError(
                out,
                "is a file of the repository (config/ or tracked by git), which updates replace",
                "write your config elsewhere, e.g. --out my-config.yaml (it reads the tracked one "
                "underneath with base:)",
            )
        required = dict(required_files(args.paper))
        values: dict[str, Any] = dict(required)
        for item in args.set:
            key, value = _parse_set(item)
            if key.split(".")[0] == "base":
                raise InputError(
                    f"--set {key}",
                    "the config is written on top of the paper config that the first argument names (its base:)",
                    f"choose the paper with the first argument ({', '.join(sorted(PAPERS))}); --set sets the "
                    "config's other keys",
                )
            values[key] = value
        base = PAPERS[args.paper]  # from the workflow's directory, as Snakemake reads every path of a config
        optional = optional_keys(args.paper, list(required))
        text = render(args.paper, base, values, required, optional, str(out))
        check_overlay(text, base, values)
        write_text(text, out)  # the one way out: atomic, through the guard (never a link, never a system folder)
    except (InputError, ValueError) as exc:
        print(f"new-config: {exc}", file=sys.stderr)
        return 2
    left = [k for k, p in required.items() if values[k] == p and k not in optional]
    named = user_files(values, required)
    print(
        f"wrote {out}: {named} user file(s) named, {len(left)} still to set"
        + (f" ({', '.join(left)})" if left else "")
    )
    return 0


def user_files(values: dict[str, Any], required: dict[str, str]) -> int:
    """How many files the written config names: each value of a file key (``path``, ``*_path``,
    ``*_file``, or a key the paper marks as a user file), a list counting each of its paths."""
    count = 0
    for key, value in values.items():
        leaf = key.rsplit(".", 1)[-1]
        if isinstance(value, dict):  # an entry given whole: its own file keys
            count += user_files({f"{key}.{k}": v for k, v in value.items()}, {})
        elif key in required or leaf == "path" or leaf.endswith(("_path", "_file")):
            count += len([v for v in value if v]) if isinstance(value, list) else int(bool(value))
    return count
