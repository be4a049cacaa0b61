"""The one loader for every YAML file this project reads that a user could have given or edited:
configs and their bases (``base:``), the files given with ``--configfile`` (read again here, see
the Snakefile), the schema and side files such as ``config/icd9_triage.yaml``.

A file given by mistake may be a clinical note or a data file, so nothing of its content is ever
quoted back: a parse error names the file, the line and the column (PyYAML's own message prints
the offending line); a key that is not a plain name (letters, digits, ``_``, ``-``, ``.``) is
shown as "a key of N characters" (:func:`clinsent.errors.shown`). Beyond PyYAML's ``safe_load`` it refuses:

- a mapping with a key given twice (PyYAML, and Snakemake's ``--configfile``, keep the last one
  without a word: two ``minilm:`` models), naming the key and both lines;
- an alias expansion of more than :data:`MAX_NODES` nodes, or an alias inside itself (a "billion
  laughs" file would otherwise hang whatever walks the config), in well under a second;
- a binary or non-UTF-8 file, and (:func:`load_mapping`) an empty file or one whose top level
  is not a mapping, each in one line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from clinsent.errors import InputError, shown

MAX_NODES = 200_000  # expanded nodes of one document (the largest paper config has about 3,000)


class _Refused(Exception):
    def __init__(self, line: int, column: int, problem: str, fix: str) -> None:
        super().__init__(problem)
        self.line, self.column, self.problem, self.fix = line, column, problem, fix


class _Loader(yaml.SafeLoader):
    def get_single_node(self) -> Any:
        node = super().get_single_node()
        if node is not None:
            _check_expansion(node)
        return node

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        if isinstance(node, yaml.MappingNode):
            lines: dict[Any, int] = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    first = lines.get(key)
                except TypeError:  # an unhashable key: PyYAML refuses it below
                    continue
                line = key_node.start_mark.line + 1
                if first is not None:
                    raise _Refused(
                        line,
                        key_node.start_mark.column + 1,
                        f"{shown(key)} is given twice in one mapping (lines {first} and {line}); YAML keeps "
                        "the last without a word",
                        "keep one of them",
                    )
                lines[key] = line
        return super().construct_mapping(node, deep=deep)


def _check_expansion(root: Any) -> None:
    """Refuse a document whose aliases expand to more than MAX_NODES nodes, or into themselves."""
    sizes: dict[int, int] = {}
    active: set[int] = set()

    def size(node: Any) -> int:
        key = id(node)
        if key in sizes:
            return sizes[key]
        if key in active:
            mark = node.start_mark
            raise _Refused(
                mark.line + 1,
                mark.column + 1,
                "an alias refers to a node that contains it",
                "write the values out instead of the recursive alias",
            )
        active.add(key)
        children: list[Any] = []
        if isinstance(node, yaml.SequenceNode):
            children = list(node.value)
        elif isinstance(node, yaml.MappingNode):
            children = [n for pair in node.value for n in pair]
        total = 1
        for child in children:
            total += size(child)
            if total > MAX_NODES:
                mark = node.start_mark
                raise _Refused(
                    mark.line + 1,
                    mark.column + 1,
                    f"its aliases expand to more than {MAX_NODES:,} values",
                    "write the config without nested aliases (a config this large is a mistake or an attack)",
                )
        active.discard(key)
        sizes[key] = total
        return total

    size(root)


def loads(text: str, where: str | Path) -> Any:
    """The YAML document in ``text`` (read from ``where``, named in errors)."""
    try:
        return yaml.load(text, Loader=_Loader)  # noqa: S506  (a SafeLoader subclass)
    except _Refused as exc:
        raise InputError(f"{where}, line {exc.line}, column {exc.column}", exc.problem, exc.fix) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        at = f", line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        raise InputError(
            f"{where}{at}",
            "is not valid YAML (the text is not shown: the file may not be a config)",
            "give a YAML config file; if it is one, check the indentation and quoting there",
        ) from None
    except yaml.YAMLError:
        raise InputError(where, "is not valid YAML", "give a YAML config file") from None
    except RecursionError:
        raise InputError(where, "is nested too deeply to be a config", "give a YAML config file") from None


def load(path: str | Path) -> Any:
    """The YAML document of the file at ``path`` (None for an empty file)."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(path, f"cannot be read ({exc.strerror})", "give a readable YAML file") from None
    if b"\x00" in data[:65536]:
        raise InputError(path, "is a binary file, not YAML", "give a YAML config file")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            path, f"is not UTF-8 text (a byte at offset {exc.start})", "give a YAML config file saved as UTF-8"
        ) from None
    return loads(text, path)


def load_mapping(path: str | Path, what: str = "config") -> dict[str, Any]:
    """A YAML file whose top level is a mapping (a config, a base); empty or another shape is an error."""
    data = load(path)
    if data is None:
        raise InputError(path, f"the {what} is empty", f"give a {what} file with keys, e.g. base:, notes:, methods:")
    if not isinstance(data, dict):
        raise InputError(
            path,
            f"is not a mapping of config keys (its top level is a {type(data).__name__})",
            f"give a {what} file: key: value lines at the top level",
        )
    return data
