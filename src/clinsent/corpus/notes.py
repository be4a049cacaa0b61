"""Stream clinical notes from NOTEEVENTS.csv(.gz), a folder of .txt files or a parquet file.

Every reader yields pyarrow tables of at most one block of input (``NOTE_SCHEMA``), so the
corpus is never held in memory:

- ``noteevents_csv``: the MIMIC-III layout. TEXT is quoted and multi-line; pyarrow's CSV
  reader streams it in blocks of ``block_mb``. Only the configured categories are kept and
  ISERROR=1 rows are dropped.
- ``txt_dir``: one note per ``*.txt`` file (recursively, in sorted path order); the row id is
  the file's rank (1, 2, ...), the note id its relative path.
- ``parquet``: a file with an id column and a text column (``id_column``, ``text_column``);
  integer ids are the row ids, other ids are numbered in file order.

Bytes that are not UTF-8 are decoded with U+FFFD replacement; the count of such notes is
reported in :class:`ReadStats` and logged, since dropping a whole note for one bad byte
would bias the corpus. Everything else that is wrong raises :class:`InputError`.
"""

from __future__ import annotations

import gzip
import io
import logging
import re
import zlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from clinsent.errors import InputError
from clinsent.reading import Readers, check_file, parquet_file, shown_column, shown_columns
from clinsent.registry import check_values
from clinsent.textfile import header_lacks

log = logging.getLogger(__name__)

NoteReader = Callable[["NotesSpec", "ReadStats"], Iterator[pa.Table]]
# A notes format is one registered reader (``notes.format`` names it): it streams tables of
# NOTE_SCHEMA and counts what it read and skipped in ``ReadStats``.
NOTE_READERS: Readers[NoteReader] = Readers("notes", "notes format", "notes.format")
REQUIRED = ("ROW_ID", "CATEGORY", "TEXT")
OPTIONAL = ("SUBJECT_ID", "HADM_ID", "DESCRIPTION", "ISERROR")
NOTE_SCHEMA = pa.schema(
    [
        ("row_id", pa.int64()),
        ("note_id", pa.string()),
        ("subject_id", pa.int64()),
        ("hadm_id", pa.int64()),
        ("category", pa.string()),
        ("description", pa.string()),
        ("text", pa.string()),
    ]
)
NOTE_COLUMNS = NOTE_SCHEMA.names


@dataclass
class ReadStats:
    """What the reader saw: notes read, kept, and why the others were skipped."""

    notes_read: int = 0
    notes_kept: int = 0
    skipped_category: int = 0
    skipped_iserror: int = 0
    skipped_empty: int = 0
    decoded_with_replacement: int = 0
    chars_kept: int = 0
    filtered_by: tuple[str, ...] | None = None  # the categories a reader kept, when its format has them
    categories: dict[str, int] = field(default_factory=dict)  # every category value read -> notes (before filters)

    def as_dict(self) -> dict[str, int]:
        return {k: v for k, v in asdict(self).items() if k not in ("filtered_by", "categories")}

    def count_categories(self, values: pa.Array | pa.ChunkedArray) -> None:
        for item in pc.value_counts(values).to_pylist():
            name = "" if item["values"] is None else str(item["values"])
            self.categories[name] = self.categories.get(name, 0) + int(item["counts"])


@dataclass(frozen=True)
class NotesSpec:
    """Where the notes are and how to read them (the ``notes`` block of the config)."""

    path: str
    format: str = "noteevents_csv"
    categories: tuple[str, ...] | None = ("Discharge summary",)
    drop_errors: bool = True
    id_column: str = "id"
    text_column: str = "text"
    category_column: str | None = None  # parquet: the note-category column (note-category pre-training, M-Cat)
    block_mb: int = 1
    blocks: int | None = None  # read only this many blocks of each file (the dry run's check), not from the config
    more_paths: tuple[str, ...] = ()  # notes.path given as a list: the files after the first, read in order

    @property
    def paths(self) -> list[str]:
        """The notes' files: ``notes.path`` is one, or a list (MIMIC-IV-Note's discharge and radiology)."""
        return [self.path, *self.more_paths]

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any]) -> NotesSpec:
        cats = cfg.get("categories")
        given = [str(p) for p in cfg["path"]] if isinstance(cfg["path"], (list, tuple)) else [str(cfg["path"])]
        return cls(
            path=given[0],
            more_paths=tuple(given[1:]),
            format=cfg.get("format", "noteevents_csv"),
            categories=tuple(cats) if cats else None,
            drop_errors=bool(cfg.get("drop_errors", True)),
            id_column=cfg.get("id_column", "id"),
            text_column=cfg.get("text_column", "text"),
            category_column=cfg.get("category_column"),
            block_mb=int(cfg.get("block_mb", 1)),
        )


def _decode(values: pa.Array | pa.ChunkedArray) -> tuple[pa.Array, int]:
    """Binary -> UTF-8 strings; bad bytes become U+FFFD. Returns the array and the bad-row count."""
    arr = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
    try:
        return arr.cast(pa.string()), 0
    except pa.ArrowInvalid:
        out: list[str | None] = []
        bad = 0
        for raw in arr.to_pylist():
            if raw is None:
                out.append(None)
                continue
            try:
                out.append(raw.decode("utf-8"))
            except UnicodeDecodeError:
                out.append(raw.decode("utf-8", errors="replace"))
                bad += 1
        return pa.array(out, pa.string()), bad


def _table(
    row_id: pa.Array,
    note_id: pa.Array,
    text: pa.Array,
    n: int,
    subject_id: pa.Array | None = None,
    hadm_id: pa.Array | None = None,
    category: pa.Array | None = None,
    description: pa.Array | None = None,
) -> pa.Table:
    null_int = pa.nulls(n, pa.int64())
    empty = pa.array([""] * n, pa.string())
    return pa.Table.from_arrays(
        [
            row_id,
            note_id,
            subject_id if subject_id is not None else null_int,
            hadm_id if hadm_id is not None else null_int,
            category if category is not None else empty,
            description if description is not None else empty,
            text,
        ],
        schema=NOTE_SCHEMA,
    )


def _csv_header(path: Path) -> list[str]:
    opener: Any = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rt", encoding="utf-8", errors="replace") as fh:
            header_line = fh.readline(1 << 16)  # a header line, never a whole file without line breaks
    except (OSError, EOFError, zlib.error) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
        raise InputError(  # gzip's own message quotes the file's first bytes: never shown
            path,
            f"cannot read the notes file ({reason})",
            "check that the file is a complete .csv or .csv.gz (re-copy or re-download it)",
        ) from None
    return [c.strip().strip('"') for c in header_line.strip().split(",")] if header_line.strip() else []


class _QuoteCounter(io.RawIOBase):
    """The CSV's bytes as pyarrow reads them, counting double quotes on the way: a complete CSV
    has an even count (each quoted field opens and closes; an escaped quote is two), so an odd
    count at the end means the file stops inside a quoted field (a note cut off mid-text), which
    pyarrow's parser accepts as a complete last row. Costs a ``bytes.count`` per block."""

    def __init__(self, raw: Any) -> None:
        super().__init__()
        self.raw, self.quotes = raw, 0

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes:
        data: bytes = self.raw.read(size if size is not None and size >= 0 else None)
        self.quotes += data.count(b'"')
        return data

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def close(self) -> None:
        self.raw.close()
        super().close()


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


def _int_column(values: pa.Array, path: Path, column: str, records: np.ndarray) -> pa.Array:
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


def _optional_int(values: pa.Array) -> pa.Array:
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


def _csv_blocks(
    path: Path, spec: NotesSpec, stats: ReadStats, layout: CsvLayout
) -> Iterator[tuple[dict[str, pa.Array], np.ndarray]]:
    """The columns of ``layout`` found in the CSV, decoded (bad bytes replaced and counted), one
    read block at a time, with each row's CSV record number (the header is 1); a row pyarrow
    cannot split, a block it cannot parse and a file cut inside a quoted field stop with the
    file and the row, never the row's text."""
    names = _csv_header(path)
    if not names:
        raise InputError(path, "the notes file is empty (no header row)", f"point `notes.path` at a {layout.name}")
    missing = [c for c in layout.required if c not in names]
    if missing:
        raise InputError(path, header_lacks(names, missing), layout.fix_header)
    include = [c for c in (*layout.required, *layout.optional) if c in names]
    bad = _BadRow()
    source = _QuoteCounter(pa.input_stream(str(path)))  # .gz decompressed by extension
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
        raise InputError(
            path,
            f"cannot open the notes CSV ({_reason(exc)})",
            f"check that the file is a complete {layout.name} (.csv or .csv.gz): re-copy or re-download it",
        ) from None
    records, blocks = 1, 0  # CSV records read so far, the header included
    while spec.blocks is None or blocks < spec.blocks:
        try:
            batch = reader.read_next_batch()
        except StopIteration:
            break
        except (pa.ArrowInvalid, OSError, EOFError, zlib.error) as exc:
            reason = _reason(exc)
            if reason == "a row straddles the read block":
                raise InputError(
                    path,
                    f"a note is larger than the read block of {spec.block_mb} MB ({reason})",
                    "raise `notes.block_mb` above the size of the largest note",
                ) from None
            raise InputError(
                path,
                f"cannot parse the notes CSV after {stats.notes_read} rows ({reason})",
                "the file must be a complete CSV (or .csv.gz) with quoted multi-line text; "
                "re-copy a truncated file, or fix the rows after the last one read",
            ) from None
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
            cols[name], replaced = _decode(batch.column(name))
            if name == layout.text:
                stats.decoded_with_replacement += replaced
        yield cols, row_numbers
    source.close()
    if spec.blocks is None and source.quotes % 2:
        raise InputError(
            f"{path}, row {records} (the header is row 1)",
            "the file ends inside this row's quoted field: the note is cut off",
            "the file is truncated (an interrupted copy or download): re-copy it",
        )


def _keep(category: pa.Array, spec: NotesSpec, stats: ReadStats) -> pa.Array:
    """Which rows the category filter keeps (counting the categories read and the rows skipped)."""
    n = len(category)
    keep = pa.array(np.ones(n, dtype=bool))
    stats.count_categories(category)
    if spec.categories:
        in_cat = pc.is_in(category, value_set=pa.array(list(spec.categories), pa.string()))
        stats.skipped_category += n - int(pc.sum(in_cat).as_py() or 0)
        keep = pc.and_(keep, in_cat)
    return keep


@NOTE_READERS.register("noteevents_csv", check=lambda path, entry, where: check_notes(path, entry, file=True))
def iter_noteevents(spec: NotesSpec, stats: ReadStats) -> Iterator[pa.Table]:
    path = Path(spec.path)
    stats.filtered_by = spec.categories
    for cols, row_numbers in _csv_blocks(path, spec, stats, NOTEEVENTS):
        keep = _keep(cols["CATEGORY"], spec, stats)
        if spec.drop_errors and "ISERROR" in cols:
            is_err = pc.equal(pc.utf8_trim_whitespace(cols["ISERROR"]), "1")
            dropped = pc.and_(keep, is_err)
            stats.skipped_iserror += int(pc.sum(dropped).as_py() or 0)
            keep = pc.and_(keep, pc.invert(is_err))
        cols = {k: v.filter(keep) for k, v in cols.items()}
        m = len(cols["TEXT"])
        if m == 0:
            continue
        row_id = _int_column(cols["ROW_ID"], path, "ROW_ID", row_numbers[keep.to_numpy(zero_copy_only=False)])
        yield _table(
            row_id,
            pc.utf8_trim_whitespace(cols["ROW_ID"]),
            cols["TEXT"],
            m,
            _optional_int(cols["SUBJECT_ID"]) if "SUBJECT_ID" in cols else None,
            _optional_int(cols["HADM_ID"]) if "HADM_ID" in cols else None,
            cols["CATEGORY"],
            cols.get("DESCRIPTION"),
        )


# MIMIC-IV-Note's note types -> MIMIC-III's CATEGORY (so `notes.categories` filters work unchanged)
# and DESCRIPTION (a report or an addendum)
MIMIC_IV_TYPES = {
    "DS": ("Discharge summary", "Report"),
    "AD": ("Discharge summary", "Addendum"),
    "RR": ("Radiology", "Report"),
    "AR": ("Radiology", "Addendum"),
}


_NOTE_ID = r"^(?P<subject>\d{1,9})-(?P<type>[A-Z]{2})-(?P<seq>\d{1,4})$"  # MIMIC-IV: 10000032-DS-21


def note_id_rows(note_ids: pa.Array, path: Path, records: np.ndarray) -> pa.Array:
    """MIMIC-IV note ids (``<subject_id>-<type>-<note_seq>``) as the row ids that shards and
    sentence ids are made of: ``(subject_id x 4 + type) x 10,000 + note_seq`` (the type's rank in
    :data:`MIMIC_IV_TYPES`), so a note's row id depends on the note alone (adding a file moves no
    note's shard) and sentence ids (row id x 10^6 + index) stay within 64 bits. An id of another
    shape stops with its CSV row (never the id)."""
    parts = pc.extract_regex(note_ids, _NOTE_ID)
    rank = pc.index_in(parts.field("type"), value_set=pa.array(list(MIMIC_IV_TYPES), pa.string()))
    bad = pc.or_(pc.is_null(parts), pc.is_null(rank))
    if pc.any(bad).as_py():
        row = int(records[int(np.flatnonzero(bad.to_numpy(zero_copy_only=False))[0])])
        raise InputError(
            f"{path}, row {row} (the header is row 1)",
            "note_id is not MIMIC-IV-Note's <subject_id>-<DS|AD|RR|AR>-<note_seq> (up to 9, 2 and 4 characters)",
            "give MIMIC-IV-Note's files as shipped, or another layout with notes.format: parquet and its id column",
        )
    subject = pc.cast(parts.field("subject"), pa.int64())
    seq = pc.cast(parts.field("seq"), pa.int64())
    return pc.add(pc.multiply(pc.add(pc.multiply(subject, 4), pc.cast(rank, pa.int64())), 10_000), seq)


@NOTE_READERS.register("mimic_iv_note", check=lambda path, entry, where: check_notes(path, entry, file=True))
def iter_mimic_iv(spec: NotesSpec, stats: ReadStats) -> Iterator[pa.Table]:
    """MIMIC-IV-Note as shipped (``note/discharge.csv.gz``, ``note/radiology.csv.gz``): ``note_id``
    is the note id, and gives the row id (:func:`note_id_rows`); ``note_type`` becomes MIMIC-III's
    category (DS and its addenda AD: ``Discharge summary``; RR and AR: ``Radiology``), so
    ``notes.categories`` filters as on NOTEEVENTS; an unknown type keeps its code as its category."""
    path = Path(spec.path)
    types = pa.array(list(MIMIC_IV_TYPES), pa.string())
    categories = pa.array([c for c, _ in MIMIC_IV_TYPES.values()], pa.string())
    descriptions = pa.array([d for _, d in MIMIC_IV_TYPES.values()], pa.string())
    stats.filtered_by = spec.categories
    for cols, row_numbers in _csv_blocks(path, spec, stats, MIMIC_IV):
        code = pc.utf8_trim_whitespace(cols["note_type"])
        at = pc.index_in(code, value_set=types)
        category = pc.coalesce(pc.take(categories, at), code)
        description = pc.coalesce(pc.take(descriptions, at), code)
        keep = _keep(category, spec, stats)
        note_id = pc.utf8_trim_whitespace(cols["note_id"]).filter(keep)
        m = len(note_id)
        if m == 0:
            continue
        if note_id.null_count or not pc.all(pc.greater(pc.utf8_length(note_id), 0)).as_py():
            empty = int(
                np.flatnonzero(
                    ~pc.fill_null(pc.greater(pc.utf8_length(note_id), 0), False).to_numpy(zero_copy_only=False)
                )[0]
            )
            raise InputError(
                f"{path}, row {int(row_numbers[keep.to_numpy(zero_copy_only=False)][empty])} (the header is row 1)",
                "note_id is empty",
                "give every note its note_id (MIMIC-IV-Note's files have one in every row)",
            )
        yield _table(
            note_id_rows(note_id, path, row_numbers[keep.to_numpy(zero_copy_only=False)]),
            note_id,
            cols["text"].filter(keep),
            m,
            _optional_int(cols["subject_id"].filter(keep)) if "subject_id" in cols else None,
            _optional_int(cols["hadm_id"].filter(keep)) if "hadm_id" in cols else None,
            category.filter(keep),
            description.filter(keep),
        )


def check_notes(path: Path, entry: Mapping[str, Any], file: bool) -> None:
    """The dry run's check of one notes file (``file``; else a folder, txt_dir's): it exists, and its
    header and first read block parse (no row after it is read; categories are the job's check)."""
    spec = NotesSpec.from_config({**entry, "path": str(path)})
    if file:
        check_file(path, "set `notes.path` to your notes file(s)", text=False)
    stats = ReadStats()
    for _ in NOTE_READERS.get(spec.format)(replace(spec, blocks=1, categories=None), stats):
        pass


@NOTE_READERS.register("txt_dir", check=lambda path, entry, where: check_notes(path, entry, file=False))
def iter_txt_dir(spec: NotesSpec, stats: ReadStats) -> Iterator[pa.Table]:
    root = Path(spec.path)
    if not root.is_dir():
        raise InputError(root, "not a folder", "with `notes.format: txt_dir`, `notes.path` is a folder of .txt notes")
    files = sorted(p for p in root.rglob("*.txt") if p.is_file())
    if not files:
        raise InputError(root, "no *.txt file in the folder", "put one note per .txt file in `notes.path`")
    budget = spec.block_mb << 20
    ids: list[int] = []
    names: list[str] = []
    texts: list[str] = []
    size = 0
    for rank, f in enumerate(files, start=1):
        raw = f.read_bytes()
        stats.notes_read += 1
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            text = raw.decode("utf-8", errors="replace")
            stats.decoded_with_replacement += 1
            log.warning("%s: not UTF-8; undecodable bytes replaced by U+FFFD", f)
        ids.append(rank)
        names.append(f.relative_to(root).as_posix())
        texts.append(text)
        size += len(raw)
        if size >= budget:
            yield _table(
                pa.array(ids, pa.int64()), pa.array(names, pa.string()), pa.array(texts, pa.string()), len(ids)
            )
            ids, names, texts, size = [], [], [], 0
            if spec.blocks is not None and rank >= spec.blocks:  # the dry run's check: the first block
                return
    if ids:
        yield _table(pa.array(ids, pa.int64()), pa.array(names, pa.string()), pa.array(texts, pa.string()), len(ids))


@NOTE_READERS.register("parquet", check=lambda path, entry, where: check_notes(path, entry, file=True))
def iter_parquet(spec: NotesSpec, stats: ReadStats) -> Iterator[pa.Table]:
    path = Path(spec.path)
    pf = parquet_file(path)
    names = pf.schema_arrow.names
    wanted = [spec.id_column, spec.text_column] + ([spec.category_column] if spec.category_column else [])
    missing = [c for c in wanted if c not in names]
    if missing:
        raise InputError(
            path,
            f"missing column(s) {', '.join(map(shown_column, missing))} (the file's columns: {shown_columns(names)})",
            "set `notes.id_column`, `notes.text_column` (and `notes.category_column`) to the id, text "
            "(and category) columns",
        )
    id_type = pf.schema_arrow.field(spec.id_column).type
    integer_ids = pa.types.is_integer(id_type)
    offset = 0
    for block, batch in enumerate(pf.iter_batches(batch_size=4096, columns=wanted)):
        if spec.blocks is not None and block >= spec.blocks:
            break
        n = batch.num_rows
        stats.notes_read += n
        text = batch.column(1)
        if not pa.types.is_string(text.type) and not pa.types.is_large_string(text.type):
            text, bad = _decode(text.cast(pa.binary()))
            stats.decoded_with_replacement += bad
        text = text.cast(pa.string())
        ids = batch.column(0)
        if integer_ids:
            if ids.null_count:
                raise InputError(path, f"column {spec.id_column!r} has null ids", "give every note an id")
            row_id = ids.cast(pa.int64())
        else:
            row_id = pa.array(np.arange(offset + 1, offset + n + 1, dtype=np.int64))
        offset += n
        category = batch.column(2).cast(pa.string()) if spec.category_column else None
        if category is not None:
            stats.count_categories(category)
        yield _table(row_id, ids.cast(pa.string()), text, n, category=category)


def iter_notes(spec: NotesSpec, stats: ReadStats | None = None) -> Iterator[pa.Table]:
    """Stream the kept notes as tables with ``NOTE_SCHEMA`` (empty texts are dropped and counted)."""
    stats = stats if stats is not None else ReadStats()
    path = Path(spec.path)
    source = NOTE_READERS.get(spec.format, where="config: notes.format")
    for one in spec.paths:
        if not Path(one).exists():
            raise InputError(
                one,
                "the notes path does not exist",
                "set `notes.path` in the config to your NOTEEVENTS.csv(.gz), MIMIC-IV-Note file(s), notes folder "
                "or parquet file",
            )
    tables = (t for one in spec.paths for t in source(replace(spec, path=one, more_paths=()), stats))
    for table in tables:
        nonempty = pc.greater(pc.utf8_length(pc.utf8_trim_whitespace(pc.fill_null(table["text"], ""))), 0)
        kept = table.filter(nonempty)
        stats.skipped_empty += table.num_rows - kept.num_rows
        stats.notes_kept += kept.num_rows
        stats.chars_kept += int(pc.sum(pc.utf8_length(kept["text"])).as_py() or 0)
        if kept.num_rows:
            yield kept
    if stats.filtered_by and stats.notes_read:  # a category that matches no note would silently drop a class
        check_values(stats.filtered_by, stats.categories, "notes.categories", path, "note CATEGORY")
    if stats.notes_kept == 0:
        raise InputError(
            path,
            f"0 notes after the category filter ({_categories(stats)}): {stats.notes_read} read, "
            f"{stats.skipped_category} of other categories, {stats.skipped_iserror} marked ISERROR, "
            f"{stats.skipped_empty} empty",
            "point `notes.path` at a file with notes, and set `notes.categories` to categories the file "
            "has (MIMIC-III: e.g. 'Discharge summary', 'Nursing', 'Radiology'), or null for all",
        )
    if stats.decoded_with_replacement:
        log.warning(
            "%s: %d note(s) had bytes that are not UTF-8; they were replaced by U+FFFD",
            path,
            stats.decoded_with_replacement,
        )


def _categories(stats: ReadStats) -> str:
    return ", ".join(repr(c) for c in stats.filtered_by) if stats.filtered_by else "none"


def read_notes(spec: NotesSpec, stats: ReadStats | None = None) -> pd.DataFrame:
    """All kept notes in one DataFrame, sorted by row_id: for small inputs and tests only."""
    tables = list(iter_notes(spec, stats))
    table = pa.concat_tables(tables) if tables else NOTE_SCHEMA.empty_table()
    return table.to_pandas().sort_values("row_id", kind="stable").reset_index(drop=True)


def read_noteevents(
    path: str | Path, categories: list[str] | None, drop_errors: bool = True, block_mb: int = 1
) -> pd.DataFrame:
    """NOTEEVENTS.csv(.gz) as one DataFrame (see :func:`read_notes`)."""
    return read_notes(
        NotesSpec(
            str(path), "noteevents_csv", tuple(categories) if categories else None, drop_errors, block_mb=block_mb
        )
    )
