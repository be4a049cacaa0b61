"""NLI data as distributed -> (anchor, positive, negative) triplets for supervised SimCSE.

Formats (``training_data.<name>.format``, and the retrieval task's ``eval_sets.<name>.format``;
each registered in :data:`NLI_FORMATS`):
- ``nli_jsonl``: SNLI / MultiNLI / MedNLI jsonl, one JSON object per line with ``sentence1``
  (premise), ``sentence2`` (hypothesis) and ``gold_label``; SNLI's ``-`` (no consensus) is
  skipped and counted;
- ``nli_tsv``: tab-separated with a header naming ``premise``, ``hypothesis`` and ``label``.
Labels are ``entailment``, ``neutral`` and ``contradiction`` (any case); a row with another
label or a missing field stops the read, after the whole file is checked: the error counts such
rows and names the first lines (never their text).

Triplets (SimCSE section 4, supervised): for each premise, in file order, its i-th
entailment hypothesis is the positive and its (i mod C)-th contradiction hypothesis the hard
negative, so every entailment pair is used once. Premises without an entailment or without a
contradiction are dropped and counted (neutral pairs are not used).
"""

from __future__ import annotations

import csv
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from clinsent.data.readers import READERS, entry_paths
from clinsent.errors import InputError
from clinsent.io.files import jsonl_objects
from clinsent.io.reading import FIRST_ROWS, Check, Readers, check_file, state_repeats
from clinsent.io.textfile import csv_rows, header_lacks, text_lines

LABELS = ("entailment", "neutral", "contradiction")
KEPT = "they are kept (each makes its triplets) and counted in the training rows' report (repeated_pairs)"
TRIPLET_COLUMNS = ["anchor", "positive", "negative"]


class _Problems:
    """Bad rows of one file, collected so the error counts them all and names the first."""

    def __init__(self, path: str | Path) -> None:
        self.path, self.first = path, ("", "")
        self.lines: list[int] = []

    def add(self, line: int, what: str, fix: str) -> None:
        if not self.lines:
            self.first = (what, fix)
        self.lines.append(line)

    def raise_any(self) -> None:
        if self.lines:
            shown = ", ".join(map(str, self.lines[:5])) + (", ..." if len(self.lines) > 5 else "")
            raise InputError(
                f"{self.path}:{self.lines[0]}",
                f"{self.first[0]} ({len(self.lines)} bad row(s), at lines {shown})",
                self.first[1],
            )


def _label(value: Any, line: int, skipped: dict[str, int], problems: _Problems) -> str | None:
    label = str(value).strip().lower() if value is not None else ""
    if label == "-":
        skipped["no_gold_label"] += 1
        return None
    if label not in LABELS:
        problems.add(
            line,
            f"the label is not one of {', '.join(LABELS)} (the value is not shown: in a file with "
            "swapped columns it is text)",
            "fix the rows, or check the file's `format`",
        )
        return None
    return label


def read_nli_jsonl(path: str | Path, skipped: dict[str, int], limit: int | None = None) -> list[tuple[str, str, str]]:
    """The labelled pairs of a jsonl file (``limit``: of its first lines only, the dry run's check)."""
    out, lines = [], []
    problems = _Problems(path)
    for line_no, row in jsonl_objects(path, "give one JSON object per line (SNLI/MedNLI jsonl)"):
        if limit is not None and line_no > limit:
            break
        missing = [k for k in ("sentence1", "sentence2", "gold_label") if k not in row]
        if missing:
            problems.add(line_no, f"missing field(s) {missing}", "each line needs sentence1, sentence2 and gold_label")
            continue
        empty = [k for k in ("sentence1", "sentence2") if not isinstance(row[k], str) or not row[k].strip()]
        if empty:  # null would become the text "None", and empty premises would merge into one
            problems.add(line_no, f"field(s) {empty} null, empty or not text", "give every line both sentences")
            continue
        label = _label(row["gold_label"], line_no, skipped, problems)
        if label:
            out.append((row["sentence1"].strip(), row["sentence2"].strip(), label))
            lines.append(f"{path}:{line_no}")
    problems.raise_any()
    state_repeats(str(path), out, lines, KEPT)
    return out


def read_nli_tsv(path: str | Path, skipped: dict[str, int], limit: int | None = None) -> list[tuple[str, str, str]]:
    """The labelled pairs of a TSV file (``limit``: of its first lines only, the dry run's check)."""
    out, lines = [], []
    reader = csv_rows(text_lines(path), path, delimiter="\t", quoting=csv.QUOTE_NONE)
    header = [h.strip() for h in next(reader, (1, []))[1]]
    missing = [c for c in ("premise", "hypothesis", "label") if c not in header]
    if missing:
        raise InputError(f"{path}:1", header_lacks(header, missing), "add a header `premise<TAB>hypothesis<TAB>label`")
    ip, ih, il = (header.index(c) for c in ("premise", "hypothesis", "label"))
    problems = _Problems(path)
    for line_no, r in reader:
        if limit is not None and line_no > limit:
            break
        if not any(c.strip() for c in r):
            continue
        if len(r) != len(header):  # fewer, or a tab inside a text
            problems.add(line_no, f"{len(r)} field(s), expected {len(header)} (a tab inside a text?)", "fix the rows")
            continue
        if not r[ip].strip() or not r[ih].strip():
            problems.add(line_no, "the premise or the hypothesis is empty", "give every row both texts")
            continue
        label = _label(r[il], line_no, skipped, problems)
        if label:
            out.append((r[ip].strip(), r[ih].strip(), label))
            lines.append(f"{path}:{line_no}")
    problems.raise_any()
    state_repeats(str(path), out, lines, KEPT)
    return out


def triplets(pairs: list[tuple[str, str, str]]) -> tuple[pd.DataFrame, dict[str, int]]:
    by_premise: dict[str, dict[str, list[str]]] = {}
    for premise, hypothesis, label in pairs:
        by_premise.setdefault(premise, {k: [] for k in LABELS})[label].append(hypothesis)
    rows, dropped = [], {"no_entailment": 0, "no_contradiction": 0}
    for premise, hyp in by_premise.items():
        ent, con = hyp["entailment"], hyp["contradiction"]
        if not ent:
            dropped["no_entailment"] += 1
            continue
        if not con:
            dropped["no_contradiction"] += 1
            continue
        rows += [(premise, e, con[i % len(con)]) for i, e in enumerate(ent)]
    return pd.DataFrame(rows, columns=TRIPLET_COLUMNS), dropped


def _read(entry: dict[str, Any], read_one: Any) -> tuple[pd.DataFrame, dict[str, Any]]:
    skipped = {"no_gold_label": 0}
    pairs = []
    for path in entry_paths(entry["path"]):
        if not Path(path).exists():
            raise InputError(path, "the training-data file does not exist", "fix `training_data.<name>.path`")
        pairs += read_one(path, skipped)
    df, dropped = triplets(pairs)
    premises = len({p for p, _, _ in pairs})
    report = {
        "pairs": len(pairs),
        "repeated_pairs": len(pairs) - len(set(pairs)),  # kept: each makes its triplets (logged by the reader)
        "premises": premises,
        "premises_dropped": dropped,
        "triplets": len(df),
        "pairs_skipped": skipped,
        "labels": {k: sum(1 for *_, lab in pairs if lab == k) for k in LABELS},
    }
    if df.empty:
        raise InputError(
            ", ".join(entry_paths(entry["path"])),
            f"no premise has both an entailment and a contradiction hypothesis ({premises} premises)",
            "check the labels, or use another file",
        )
    return df, report


# NLI pair files as distributed (the retrieval task's and the training rows' formats): name -> reader.
# As an eval set (the retrieval task) a file is read in full at dry run; as training rows, its first lines.
NLI_FORMATS: Readers[Callable[..., list[tuple[str, str, str]]]] = Readers(
    "nli", "NLI format", "eval_sets.<name>.format", read_in_full=True
)
NLI_FORMATS.register("nli_jsonl")(read_nli_jsonl)
NLI_FORMATS.register("nli_tsv")(read_nli_tsv)


def _training_reader(read_one: Any) -> Callable[[dict[str, Any]], tuple[pd.DataFrame, dict[str, Any]]]:
    return lambda entry: _read(entry, read_one)


def _first_rows(read_one: Any) -> Check:
    def check(path: Path, entry: Mapping[str, Any], where: str) -> None:
        """The dry run's check of a training-data file: its header and first rows."""
        check_file(path, f"set `{where}` to the training-data file")
        read_one(path, {"no_gold_label": 0}, limit=FIRST_ROWS)

    return check


for _name in NLI_FORMATS.names():  # every NLI format is a training-data format too
    READERS.register(_name, check=_first_rows(NLI_FORMATS.get(_name)))(_training_reader(NLI_FORMATS.get(_name)))
