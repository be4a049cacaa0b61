"""Probe files (:class:`clinsent.tasks.probe.Probe`'s data): the registered layouts
(:data:`PROBE_FORMATS`: ``tsv`` with a header, ``jsonl``, ``nli_jsonl`` as MedNLI and SNLI are
distributed, a file per split), read into texts, labels and splits with every row named by its
file and line (never its text), the split and class values checked.
"""

from __future__ import annotations

import csv
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from clinsent.errors import InputError
from clinsent.io.files import jsonl_objects
from clinsent.io.reading import Readers, state_repeats
from clinsent.io.textfile import csv_rows, text_lines

Records = list[tuple[str, dict[str, Any]]]  # (where: file and line, never text; the row's fields)


class ProbeFile(Protocol):
    """What reading a probe file needs of its eval-set entry (:class:`clinsent.tasks.probe.ProbeSettings`)."""

    @property
    def path(self) -> str: ...

    @property
    def format(self) -> str: ...

    @property
    def dev_path(self) -> str | None: ...

    @property
    def test_path(self) -> str | None: ...

    @property
    def inputs(self) -> str: ...

    @property
    def splits(self) -> tuple[str, ...]: ...

    @property
    def classes(self) -> tuple[str, ...] | None: ...

    @property
    def positive_label(self) -> str: ...


@dataclass(frozen=True)
class ProbeFormat:
    """A probe file layout: its records (every split), the files it reads, and what it needs of
    the entry (checked when the config is read)."""

    read: Callable[[ProbeFile, Path], Records]
    files: Callable[[ProbeFile], list[str]] = lambda s: [s.path]
    check: Callable[[ProbeFile, str], None] = lambda s, set_name: None
    header: Callable[[ProbeFile], list[str]] | None = None  # the columns its header line must hold (None: no header)


PROBE_FORMATS: Readers[ProbeFormat] = Readers("probe", "probe format", "eval_sets.<name>.format", read_in_full=True)


@dataclass(frozen=True)
class ProbeSet:
    texts1: list[str]
    texts2: list[str] | None
    labels: list[str]
    splits: list[str]

    def rows(self, split: str) -> np.ndarray:
        return np.array([i for i, s in enumerate(self.splits) if s == split], dtype=np.int64)


def columns(settings: ProbeFile) -> list[str]:
    return (["text"] if settings.inputs == "single" else ["text1", "text2"]) + ["label", "split"]


def _opened(read: Callable[[Path], Records]) -> Callable[[ProbeFile, Path], Records]:
    """One file with a split column, its missing file named (bad encoding: clinsent.io.textfile)."""

    def records(settings: ProbeFile, path: Path) -> Records:
        try:
            return read(path)
        except FileNotFoundError as exc:
            raise InputError(path, "the probe file does not exist", "fix `eval_sets.<name>.path`") from exc

    return records


def _tsv(path: Path) -> Records:
    rows = [r for _, r in csv_rows(text_lines(path), path, delimiter="\t", quoting=csv.QUOTE_NONE)]
    if not rows:
        return []
    header = [h.strip() for h in rows[0]]
    out = []
    for n, r in enumerate(rows[1:], start=2):
        if not any(c.strip() for c in r):
            continue
        if len(r) > len(header):  # the row would shift into the wrong columns
            raise InputError(
                f"{path}:{n}",
                f"{len(r)} fields, the header has {len(header)} (a tab inside a text?)",
                "remove tabs from the texts (the TSV has no quoting), or write the file as jsonl",
            )
        out.append((f"{path}:{n}", dict(zip(header, r, strict=False))))
    return out


def _jsonl(path: Path) -> Records:
    return [(f"{path}:{n}", obj) for n, obj in jsonl_objects(path, "write one JSON object per line")]


def _nli_records(settings: ProbeFile, path: Path) -> Records:
    """MedNLI/SNLI jsonl files as pair records, a split per file (``-`` labels skipped)."""
    from clinsent.data.nli import read_nli_jsonl

    out: Records = []
    for split, file in zip(settings.splits, (str(path), settings.dev_path, settings.test_path), strict=True):
        if not file:
            raise InputError(
                "config: eval_sets",
                f"format nli_jsonl needs path, dev_path and test_path (no {split} file)",
                "give the train, dev and test files",
            )
        if not Path(file).exists():
            raise InputError(file, "the probe file does not exist", "fix `path`, `dev_path` or `test_path`")
        for n, (p, h, label) in enumerate(read_nli_jsonl(file, {"no_gold_label": 0}), start=1):
            out.append((f"{file} pair {n}", {"text1": p, "text2": h, "label": label, "split": split}))
    return out


def _nli_check(settings: ProbeFile, set_name: str) -> None:
    if settings.inputs != "pair" or not settings.dev_path or not settings.test_path:
        raise InputError(
            f"config: eval_sets.{set_name}",
            "format nli_jsonl reads premise/hypothesis pairs from three files",
            "set inputs: pair, dev_path and test_path",
        )


PROBE_FORMATS.register("tsv")(ProbeFormat(_opened(_tsv), header=columns))
PROBE_FORMATS.register("jsonl")(ProbeFormat(_opened(_jsonl)))
PROBE_FORMATS.register("nli_jsonl")(
    ProbeFormat(_nli_records, files=lambda s: [s.path] + [f for f in (s.dev_path, s.test_path) if f], check=_nli_check)
)


def read_probe(path: str | Path, settings: ProbeFile) -> ProbeSet:
    path = Path(path)
    records = PROBE_FORMATS.get(settings.format).read(settings, path)
    if not records:
        raise InputError(path, "the probe file has no rows", "point the eval set at a file with rows")
    wanted = columns(settings)
    cols: dict[str, list[str]] = {c: [] for c in wanted}
    for where, rec in records:
        missing = [c for c in wanted if rec.get(c) is None or str(rec.get(c)).strip() == ""]
        if missing:
            raise InputError(
                where, f"no value for {missing}", f"give every row {', '.join(wanted)} (inputs: {settings.inputs})"
            )
        for c in wanted:
            cols[c].append(str(rec[c]).strip())
    state_repeats(str(path), list(zip(*(cols[c] for c in wanted), strict=True)), [w for w, _ in records])
    data = ProbeSet(
        cols["text"] if settings.inputs == "single" else cols["text1"],
        None if settings.inputs == "single" else cols["text2"],
        cols["label"],
        cols["split"],
    )
    other = [i for i, split in enumerate(data.splits) if split not in settings.splits]
    if other:
        cased = sum(data.splits[i].lower() in settings.splits for i in other)
        raise InputError(
            records[other[0]][0],
            f"{len(other)} row(s) have a split that is not one of "
            f"{list(settings.splits)} (the values are not shown; {cased} of them differ from one only in "
            "case); they would be left out of every split",
            "fix the split column, or set `splits` to the file's three names",
        )
    for name in settings.splits:
        if not len(data.rows(name)):
            raise InputError(
                path,
                f"split {name!r} has no rows ({len(set(data.splits))} other split value(s); values are not shown)",
                "label rows train, dev and test, or set `splits` to the file's names",
            )
    if settings.classes:
        unknown = sorted(set(data.labels) - set(settings.classes))
        if unknown:
            first = next(i for i, lab in enumerate(data.labels) if lab not in settings.classes)
            raise InputError(
                records[first][0],
                f"{len(unknown)} label value(s) are not among classes "
                f"{list(settings.classes)} ({sum(lab not in settings.classes for lab in data.labels)} rows; "
                "the values are not shown)",
                "fix the rows, or list every label under `classes`",
            )
    train_labels = {data.labels[i] for i in data.rows(settings.splits[0])}
    if len(train_labels) < 2:
        raise InputError(path, f"the train split has {len(train_labels)} class", "a probe needs two classes or more")
    return data


def check_positive_label(data: ProbeSet, settings: ProbeFile, set_name: str) -> None:
    """Two classes whose names do not include ``positive_label``: the binary F1 cannot be
    computed, and ``f1`` would silently be the macro F1. Stop, naming the key (the label values
    are the file's; they are not shown)."""
    classes = set(data.labels)
    if len(classes) == 2 and settings.positive_label not in classes:
        cased = sum(c.strip().lower() == settings.positive_label.strip().lower() for c in classes)
        raise InputError(
            f"config: eval_sets.{set_name}.positive_label",
            f"{settings.positive_label!r} is not one of "
            f"the two label values of {settings.path} (values not shown; {cased} differ from it only in "
            "case or spaces), so `f1` would be the macro F1, not the binary F1 of the positive class",
            "set `positive_label` to the label of the positive class as written in the file",
        )
