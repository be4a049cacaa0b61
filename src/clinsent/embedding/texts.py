"""Texts to embed, one per row (the ``corpus_embeddings`` inputs and ``python -m clinsent embed
--input``): the ``texts`` kind of the reader layer (:mod:`clinsent.io.reading`).

Formats, by the file's extension: plain text (``.txt``: one text per line, ids are line numbers
from 0), CSV and TSV (``column``; ids from ``id_column`` or row numbers from 0, after the header
line), JSON lines (``.jsonl``/``.json``: ``column`` names the field) and parquet (``column``).
Every format streams (:func:`chunks`: ``size`` texts at a time), and its check reads the header
and the first :data:`~clinsent.io.reading.FIRST_ROWS` rows only. Errors name the file, the row
(numbered from 0, after any header) and the column, never a text: a header field is shown only
when it is a column asked for or a format's own (:func:`clinsent.io.reading.shown_columns`); a CSV
without a header line is said to be one (:func:`clinsent.io.reading.looks_headerless`), since its
first row would otherwise be taken for the header and a name in it come back in the message.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from clinsent.errors import InputError
from clinsent.io.reading import (
    FIRST_ROWS,
    Readers,
    check_file,
    headerless,
    looks_headerless,
    parquet_file,
    shown_column,
    shown_columns,
)
from clinsent.io.textfile import csv_rows, json_line, text_lines, text_problem

Row = tuple[Any, str]  # (id, text)
Chunk = tuple[list[Any], list[str]]  # (ids, texts)
RowReader = Callable[[Path, str | None, str | None], Iterator[Row]]
SUFFIXES = {".txt": "text", ".csv": "csv", ".tsv": "tsv", ".jsonl": "jsonl", ".json": "jsonl", ".parquet": "parquet"}
NEEDS_COLUMN = {"text": False, "csv": True, "tsv": True, "jsonl": True, "parquet": True}
FIX = "a text (.txt, one per line), .csv, .tsv, .jsonl or .parquet file"


def input_format(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise InputError(
            path,
            f"unknown input format {suffix if re.fullmatch(r'[.][a-z0-9]{1,10}', suffix) else '(no known extension)'}",
            f"an input ending in one of {', '.join(sorted(SUFFIXES))}",
        )
    return SUFFIXES[suffix]


def _check_columns(path: Path, names: list[str], column: str | None, id_column: str | None) -> None:
    for flag, name in (("column", column), ("id_column", id_column)):
        if name is not None and name not in names:
            if looks_headerless(names, (column, id_column)):
                raise headerless(
                    path, names, f"add a header line naming the columns (e.g. id,{column or 'text'}), then set {flag}"
                )
            raise InputError(
                path,
                f"no column {shown_column(name)} ({flag}); the header line has "
                f"{shown_columns(names, (column, id_column))}",
                f"set {flag} to a column of the header line (a file without a header line: add one)",
            )


def _text_rows(path: Path, column: str | None, id_column: str | None) -> Iterator[Row]:
    for number, line in enumerate(text_lines(path)):
        yield number, line.rstrip("\n").rstrip("\r")


def _delimited_rows(delimiter: str) -> RowReader:
    def rows(path: Path, column: str | None, id_column: str | None) -> Iterator[Row]:
        reader = csv_rows(text_lines(path), path, delimiter=delimiter)  # strict: an unclosed quote stops
        header = next(reader, (1, []))[1]
        _check_columns(path, header, column, id_column)
        at, ids = header.index(str(column)), header.index(id_column) if id_column else None
        for number, (_, row) in enumerate(reader):
            if not row:  # a blank line (a trailing one, often): no text, not counted as a bad row
                continue
            if len(row) != len(header):
                raise InputError(
                    f"{path}, row {number} (rows from 0, after the header)",
                    f"{len(row)} field(s) where the header has {len(header)}",
                    "quote fields that hold the delimiter or a line break, as CSV does",
                )
            yield (row[ids] if ids is not None else number), row[at]

    return rows


def _jsonl_rows(path: Path, column: str | None, id_column: str | None) -> Iterator[Row]:
    for number, line in enumerate(text_lines(path)):  # ids and rows: line numbers from 0, blank lines skipped
        if not line.strip():
            continue
        record = json_line(line, f"{path}, row {number}", "one JSON object per line")
        if not isinstance(record, dict):
            raise InputError(f"{path}, row {number}", "not a JSON object", "one JSON object per line")
        missing = [c for c in (column, id_column) if c and c not in record]
        if missing:
            raise InputError(
                f"{path}, row {number}",
                f"has no field {shown_column(missing[0])}",
                "column and id_column name fields every line has",
            )
        text = record[str(column)]
        if text is not None and not isinstance(text, str):
            raise InputError(f"{path}, row {number}", f"field {shown_column(column)} is not text", "give text")
        yield (record[id_column] if id_column else number), text or ""


def _parquet_rows(path: Path, column: str | None, id_column: str | None) -> Iterator[Row]:
    import pyarrow as pa

    table = parquet_file(path)
    _check_columns(path, table.schema_arrow.names, column, id_column)
    kind = table.schema_arrow.field(str(column)).type
    if not (pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_null(kind)):
        raise InputError(path, f"column {shown_column(column)} holds {kind}, not text", "name the texts' column")
    number = 0
    try:
        for batch in table.iter_batches(batch_size=FIRST_ROWS, columns=[c for c in (column, id_column) if c]):
            texts = batch.column(str(column)).to_pylist()
            ids = batch.column(id_column).to_pylist() if id_column else range(number, number + len(texts))
            bad = next((i for i, t in enumerate(texts) if t and text_problem(t)), None)
            if bad is not None:  # a parquet cell may hold a NUL character: no text line does
                raise InputError(f"{path}, row {number + bad}", f"the text {text_problem(texts[bad])}", "remove it")
            number += len(texts)
            yield from zip(ids, (t or "" for t in texts), strict=True)
    except (pa.ArrowInvalid, OSError) as exc:
        raise InputError(
            f"{path}, after row {number}", f"cannot be read ({type(exc).__name__})", "give a complete parquet file"
        ) from None


def chunks(path: Path, size: int, column: str | None = None, id_column: str | None = None) -> Iterator[Chunk]:
    """(ids, texts) of ``path``, ``size`` texts at a time; an empty text stops with its row number."""
    kind = input_format(path)
    if NEEDS_COLUMN[kind] and not column:
        raise InputError(path, f"a {kind} input needs a column", "name the texts' column or field (column, --column)")
    if not NEEDS_COLUMN[kind] and (column or id_column):
        raise InputError(
            path,
            f"a {kind} input (.txt: one text per line, ids are line numbers) has no columns, and "
            f"{'column' if column else 'id_column'} is given",
            "leave out column and id_column (--column, --id-column), or give a .csv, .tsv, .jsonl or .parquet file",
        )
    rows = READERS.get(kind)(path, column, id_column)
    seen = 0
    while chunk := list(itertools.islice(rows, size)):
        ids, texts = [r[0] for r in chunk], [r[1] for r in chunk]
        no_id = next((i for i, v in enumerate(ids) if v is None or not str(v).strip()), None) if id_column else None
        if no_id is not None:  # an empty id would key a row of the output by nothing
            raise InputError(
                f"{path}, row {seen + no_id}",
                f"the id ({id_column}) is empty",
                "give every row an id (rows are numbered from 0, after any header), or leave out id_column",
            )
        empty = next((i for i, t in enumerate(texts) if not str(t).strip()), None)
        if empty is not None:
            if not NEEDS_COLUMN[kind]:  # a .txt input: every line is a text, a blank one too
                raise InputError(
                    f"{path}, line {seen + empty + 1}",
                    "the line is blank, and every line of a .txt input is one text (ids are line numbers from 0)",
                    "remove the blank lines (e.g. sed -i '/^[[:space:]]*$/d' FILE)",
                )
            raise InputError(
                f"{path}, row {seen + empty}",
                f"the text ({column}) is empty",
                "drop rows with an empty text (rows are numbered from 0, after any header)",
            )
        seen += len(texts)
        yield ids, texts


def ids_of(path: Path, column: str | None, id_column: str) -> Iterator[list[Any]]:
    """The ids of ``path``'s rows, a chunk at a time (the pre-pass of :func:`check_unique_ids`)."""
    for ids, _ in chunks(path, 1 << 16, column, id_column):
        yield ids


def check_unique_ids(path: Path, column: str | None, id_column: str | None) -> None:
    """Every id of ``id_column`` once (ids become the output's keys): a repeated one stops, named
    by the rows it is on (numbered from 0, after any header), never by its value, as the notes
    readers do. One pass over the ids before any model loads: each id hashed to 64 bits (pandas'
    ``hash_array``), the repeats found by sorting, and a suspected repeat confirmed on the ids
    themselves (a hash collision is no repeat). No id column: row numbers, unique by construction."""
    if not id_column:
        return
    hashes = [pd.util.hash_array(np.asarray(ids, dtype=object)) for ids in ids_of(path, column, id_column)]
    every = np.concatenate(hashes) if hashes else np.zeros(0, np.uint64)
    values, counts = np.unique(every, return_counts=True)
    suspects = set(np.flatnonzero(np.isin(every, values[counts > 1])).tolist())
    found = _repeat(ids_of(path, column, id_column), suspects) if suspects else None
    if found is not None:
        raise _repeated(path, id_column, found, f"{int((counts > 1).sum())} repeated id value(s) in all; ")


def _repeat(chunked: Iterable[list[Any]], rows: set[int]) -> tuple[int, int] | None:
    """The first two of ``rows`` whose ids are equal (their hashes were), or None."""
    seen: dict[Any, int] = {}
    at = 0
    for ids in chunked:
        for i, value in enumerate(ids, start=at):
            if i in rows:
                if value in seen:
                    return seen[value], i
                seen[value] = i
        at += len(ids)
    return None


def _repeated(path: Path, id_column: str, rows: tuple[int, int], counted: str) -> InputError:
    return InputError(
        f"{path}, rows {rows[0]} and {rows[1]}",
        f"the id ({id_column}) of row {rows[1]} repeats row {rows[0]}'s ({counted}rows are numbered from 0, "
        "after any header)",
        "ids must be unique: de-duplicate the input, or leave out --id-column (ids are then row numbers)",
    )


def check(path: Path, entry: Mapping[str, Any], where: str = "input") -> None:
    """The file exists, has a known extension and the column, and its first rows read as texts
    (the first :data:`FIRST_ROWS`: header, decoding, fields, no empty text): the dry run's check of
    a ``corpus_embeddings`` input, and the embed command's before its model loads."""
    check_file(path, FIX, text=input_format(path) != "parquet")
    first = next(chunks(path, FIRST_ROWS, entry.get("column"), entry.get("id_column")), None)
    if first is None:
        raise InputError(path, "no texts (no row after any header)", "an input with at least one row")
    found = _repeat([first[0]], set(range(len(first[0])))) if entry.get("id_column") else None
    if found is not None:  # in the first block (the run's own check reads every id)
        raise _repeated(path, str(entry["id_column"]), found, "")


READERS: Readers[RowReader] = Readers("texts", "texts format", "corpus_embeddings.<name>.input")
READERS.register("text", check=check)(_text_rows)
READERS.register("csv", check=check)(_delimited_rows(","))
READERS.register("tsv", check=check)(_delimited_rows("\t"))
READERS.register("jsonl", check=check)(_jsonl_rows)
READERS.register("parquet", check=check)(_parquet_rows)


def check_input(path: Path, entry: Mapping[str, Any], where: str) -> None:
    """The dry run's check of one configured input (``where``: its config key): a known format, a
    column where the format needs one, then the format's reader check (:func:`check`)."""
    try:
        kind = input_format(path)
        if NEEDS_COLUMN[kind] and not entry.get("column"):
            raise InputError(path, f"a {kind} input needs a column", "set column to the texts' column or field")
    except InputError as exc:
        raise InputError(f"config: {where}: {exc.where}", exc.problem, exc.fix) from None
    READERS.check(kind, path, entry, where)
