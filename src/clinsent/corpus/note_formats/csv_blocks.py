"""The CSV machinery of the two MIMIC note layouts: the header, the layouts' columns, pyarrow's
streaming reader in blocks with every bad row named by its CSV record (never its text), a file
that ends inside a quoted field refused, integer columns checked.
"""

from __future__ import annotations

import gzip
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from clinsent.corpus.notes import (
    OPTIONAL,
    REQUIRED,
    NotesSpec,
    ReadStats,
    decode_text,
)
from clinsent.errors import InputError
from clinsent.io.textfile import header_lacks


def csv_header(path: Path) -> list[str]:
    opener: Any = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rt", encoding="utf-8-sig", errors="replace") as fh:  # a byte-order mark dropped
            header_line = fh.readline(1 << 16)  # a header line, never a whole file without line breaks
    except (OSError, EOFError, zlib.error) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
        raise InputError(  # gzip's own message quotes the file's first bytes: never shown
            path,
            f"cannot read the notes file ({reason})",
            "check that the file is a complete .csv or .csv.gz (re-copy or re-download it)",
        ) from None
    return [c.strip().strip('"') for c in header_line.strip().split(",")] if header_line.strip() else []


def odd_quotes(path: Path) -> bool:
    """Whether the file (decompressed by its extension) holds an odd number of double quotes: a
    complete CSV has an even count (each quoted field opens and closes; an escaped quote is two),
    so an odd one means the file stops inside a quoted field (a note cut off mid-text), which
    pyarrow's parser accepts as a complete last row. A pass of its own over the bytes after the
    parse, in this thread: counting inside the parser's read would put Python code on its
    read-ahead thread, which then runs into the interpreter's exit when an error leaves the
    reader early (Fatal Python error: PyGILState_Release)."""
    quotes = 0
    with pa.input_stream(str(path)) as stream:
        while block := stream.read(16 << 20):
            quotes += block.count(b'"')
    return bool(quotes % 2)


@dataclass
class _BadRow:
    """The first row pyarrow could not split into the header's fields (never its text)."""

    number: int | None = None  # the CSV record, counting the header as 1 (a quoted note spans lines)
    expected: int = 0
    actual: int = 0

    def handler(self, row: Any) -> str:
        if self.number is None:
            self.number, self.expected, self.actual = int(row.number or 0), row.expected_columns, row.actual_columns
        return "skip"  # raised by the reader after the batch: pyarrow's own error would print the row


_ARROW_SAFE = re.compile(r"^(CSV parse error: )?(Row #\d+: )?Expected \d+ columns, got \d+")


def _reason(exc: BaseException) -> str:
    """What went wrong, without the row's content: pyarrow's parse errors end with the raw row
    (note text), so only their leading part is kept; I/O and decompression errors are kept."""
    msg = str(exc)
    if isinstance(exc, pa.ArrowInvalid):
        m = _ARROW_SAFE.match(msg)
        if m:
            return m.group(0)
        if "straddl" in msg or "block" in msg.lower() and "size" in msg.lower():
            return "a row straddles the read block"
        return "pyarrow could not parse it (details withheld: they may quote note text)"
    return msg


def _digits(values: pa.Array) -> tuple[pa.Array, pa.Array]:
    """The values with whitespace trimmed, and whether each is a non-negative integer."""
    stripped = pc.utf8_trim_whitespace(values)
    return stripped, pc.match_substring_regex(stripped, r"^\d+$")


def int_column(values: pa.Array, path: Path, column: str, records: np.ndarray) -> pa.Array:
    """``column`` as int64; a value that is not an integer stops with its CSV row (never the value)."""
    stripped, ok = _digits(values)
    if not pc.all(ok).as_py():
        row = int(records[int(np.flatnonzero(~ok.to_numpy(zero_copy_only=False))[0])])
        raise InputError(
            f"{path}, row {row} (the header is row 1)",
            f"{column} is not an integer",
            "check that the file is NOTEEVENTS.csv (ROW_ID is a number) and that every TEXT field is in double quotes",
        )
    return stripped.cast(pa.int64())


def optional_int(values: pa.Array) -> pa.Array:
    stripped, ok = _digits(values)
    return pc.if_else(ok, stripped, pa.scalar(None, pa.string())).cast(pa.int64())


@dataclass(frozen=True)
class CsvLayout:
    """A notes CSV as distributed: its required and optional columns, and how its errors say the fix."""

    name: str  # as errors name it: NOTEEVENTS.csv, MIMIC-IV-Note
    required: tuple[str, ...]
    optional: tuple[str, ...]
    text: str  # the text column
    fix_header: str


NOTEEVENTS = CsvLayout(
    "NOTEEVENTS.csv",
    REQUIRED,
    OPTIONAL,
    "TEXT",
    "use the MIMIC-III NOTEEVENTS.csv layout (ROW_ID, ..., CATEGORY, ..., ISERROR, TEXT), or set `notes.format` to "
    "mimic_iv_note (MIMIC-IV-Note's discharge.csv.gz, radiology.csv.gz), parquet or txt_dir for other layouts",
)
MIMIC_IV = CsvLayout(
    "MIMIC-IV-Note",
    ("note_id", "note_type", "text"),
    ("subject_id", "hadm_id"),
    "text",
    "use MIMIC-IV-Note's note/discharge.csv.gz or note/radiology.csv.gz (note_id, subject_id, hadm_id, note_type, "
    "note_seq, charttime, storetime, text), or set `notes.format` to the layout of the file",
)


def _read_error(exc: BaseException, path: Path, spec: NotesSpec, stats: ReadStats, layout: CsvLayout) -> InputError:
    """What a failed read of a notes CSV says: a note larger than the read block names the key
    to raise; anything else, the rows read so far (never the row's text)."""
    reason = _reason(exc)
    if reason == "a row straddles the read block":
        return InputError(
            path,
            f"a note is larger than the read block of {spec.block_mb} MB ({reason})",
            "raise `notes.block_mb` above the size of the largest note",
        )
    if stats.notes_read == 0 and isinstance(exc, (OSError, EOFError, zlib.error)):
        return InputError(
            path,
            f"cannot open the notes CSV ({reason})",
            f"check that the file is a complete {layout.name} (.csv or .csv.gz): re-copy or re-download it",
        )
    return InputError(
        path,
        f"cannot parse the notes CSV after {stats.notes_read} rows ({reason})",
        "the file must be a complete CSV (or .csv.gz) with quoted multi-line text; "
        "re-copy a truncated file, or fix the rows after the last one read",
    )


def read_blocks(
    path: Path, spec: NotesSpec, stats: ReadStats, layout: CsvLayout
) -> Iterator[tuple[dict[str, pa.Array], np.ndarray]]:
    """The columns of ``layout`` found in the CSV, decoded (bad bytes replaced and counted), one
    read block at a time, with each row's CSV record number (the header is 1); a row pyarrow
    cannot split, a block it cannot parse and a file cut inside a quoted field stop with the
    file and the row, never the row's text."""
    names = csv_header(path)
    if not names:
        raise InputError(path, "the notes file is empty (no header row)", f"point `notes.path` at a {layout.name}")
    missing = [c for c in layout.required if c not in names]
    if missing:
        raise InputError(path, header_lacks(names, missing), layout.fix_header)
    include = [c for c in (*layout.required, *layout.optional) if c in names]
    bad = _BadRow()
    source = pa.input_stream(str(path))  # native (.gz decompressed by extension): see odd_quotes
    try:
        reader = pacsv.open_csv(
            source,
            read_options=pacsv.ReadOptions(block_size=spec.block_mb << 20, use_threads=False),
            parse_options=pacsv.ParseOptions(newlines_in_values=True, invalid_row_handler=bad.handler),
            convert_options=pacsv.ConvertOptions(
                column_types={c: pa.binary() for c in include}, include_columns=include, strings_can_be_null=False
            ),
        )
    except (pa.ArrowInvalid, OSError, EOFError, zlib.error) as exc:
        source.close()
        raise _read_error(exc, path, spec, stats, layout) from None
    try:
        records, blocks = 1, 0  # CSV records read so far, the header included
        while spec.blocks is None or blocks < spec.blocks:
            try:
                batch = reader.read_next_batch()
            except StopIteration:
                break
            except (pa.ArrowInvalid, OSError, EOFError, zlib.error) as exc:
                raise _read_error(exc, path, spec, stats, layout) from None
            blocks += 1
            if bad.number is not None:
                raise InputError(
                    f"{path}, row {bad.number} (the header is row 1)",
                    f"{bad.actual} field(s) where the header has {bad.expected}",
                    f"quote every {layout.text} field in double quotes, doubling quotes inside it (as {layout.name} "
                    "does: unquoted commas split a note into extra fields); if the file was cut short, re-copy it",
                )
            n = batch.num_rows
            row_numbers = np.arange(records + 1, records + n + 1, dtype=np.int64)
            records += n
            stats.notes_read += n
            cols: dict[str, pa.Array] = {}
            for name in include:
                cols[name], replaced = decode_text(batch.column(name))
                if name == layout.text:
                    stats.decoded_with_replacement += replaced
            yield cols, row_numbers
    finally:
        reader.close()
        source.close()
    if spec.blocks is None and odd_quotes(path):
        raise InputError(
            f"{path}, row {records} (the header is row 1)",
            "the file ends inside this row's quoted field: the note is cut off",
            "the file is truncated (an interrupted copy or download): re-copy it",
        )
