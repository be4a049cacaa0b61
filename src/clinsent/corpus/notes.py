"""Stream clinical notes: NOTEEVENTS.csv(.gz), MIMIC-IV-Note, a folder of .txt files or a parquet file.

Every notes format is one reader module of :mod:`clinsent.corpus.note_formats`, named as its
``notes.format`` (``noteevents_csv``, ``mimic_iv_note``, ``txt_dir``, ``parquet``) and registered
in :data:`NOTE_READERS`; each yields pyarrow tables of at most one block of input
(``NOTE_SCHEMA``), so the corpus is never held in memory. This module holds what they share:
the spec a config gives (:class:`NotesSpec`), the counts (:class:`ReadStats`), the table layout,
the category filter and :func:`iter_notes`, which streams any of them.

Bytes that are not UTF-8 are decoded with U+FFFD replacement; the count of such notes is
reported in :class:`ReadStats` and logged, since dropping a whole note for one bad byte
would bias the corpus. Everything else that is wrong raises :class:`InputError`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from clinsent.config.declare import build
from clinsent.config.sections import Notes
from clinsent.errors import InputError
from clinsent.io.reading import Readers, check_file
from clinsent.registry import check_values

log = logging.getLogger(__name__)

NoteReader = Callable[["NotesSpec", "ReadStats"], Iterator[pa.Table]]
# A notes format is one registered reader (``notes.format`` names it): it streams tables of
# NOTE_SCHEMA and counts what it read and skipped in ``ReadStats``.
NOTE_READERS: Readers[NoteReader] = Readers(
    "notes", "notes format", "notes.format", package="clinsent.corpus.note_formats"
)
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


_DECLARED = Notes(path="")  # the notes section's declared defaults


@dataclass(frozen=True)
class NotesSpec:
    """Where the notes are and how to read them: the ``notes`` section (:class:`Notes`, whose
    declaration holds every default) as the readers take it, with the files as a list."""

    path: str
    format: str = _DECLARED.format
    categories: tuple[str, ...] | None = tuple(_DECLARED.categories or ()) or None
    drop_errors: bool = _DECLARED.drop_errors
    id_column: str = _DECLARED.id_column
    text_column: str = _DECLARED.text_column
    category_column: str | None = _DECLARED.category_column  # parquet: the note-category column
    block_mb: int = _DECLARED.block_mb
    blocks: int | None = None  # read only this many blocks of each file (the dry run's check), not from the config
    more_paths: tuple[str, ...] = ()  # notes.path given as a list: the files after the first, read in order

    @property
    def paths(self) -> list[str]:
        """The notes' files: ``notes.path`` is one, or a list (MIMIC-IV-Note's discharge and radiology)."""
        return [self.path, *self.more_paths]

    @classmethod
    def from_notes(cls, notes: Notes) -> NotesSpec:
        """The typed ``notes`` section as the readers take it."""
        given = [str(p) for p in notes.path] if isinstance(notes.path, (list, tuple)) else [str(notes.path)]
        return cls(
            path=given[0],
            more_paths=tuple(given[1:]),
            format=notes.format,
            categories=tuple(notes.categories) if notes.categories else None,
            drop_errors=notes.drop_errors,
            id_column=notes.id_column,
            text_column=notes.text_column,
            category_column=notes.category_column,
            block_mb=notes.block_mb,
        )

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any]) -> NotesSpec:
        """A ``notes`` entry as validated (a job's params, a reader check's entry), read back through
        its declaration (:func:`clinsent.config.declare.build`)."""
        return cls.from_notes(build(Notes, cfg))


def decode_text(values: pa.Array | pa.ChunkedArray) -> tuple[pa.Array, int]:
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


def note_table(
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


def keep_categories(category: pa.Array, spec: NotesSpec, stats: ReadStats) -> pa.Array:
    """Which rows the category filter keeps (counting the categories read and the rows skipped)."""
    n = len(category)
    keep = pa.array(np.ones(n, dtype=bool))
    stats.count_categories(category)
    if spec.categories:
        in_cat = pc.is_in(category, value_set=pa.array(list(spec.categories), pa.string()))
        stats.skipped_category += n - int(pc.sum(in_cat).as_py() or 0)
        keep = pc.and_(keep, in_cat)
    return keep


def check_notes(path: Path, entry: Mapping[str, Any], file: bool) -> None:
    """The dry run's check of one notes file (``file``; else a folder, txt_dir's): it exists, and its
    header and first read block parse (no row after it is read; categories are the job's check)."""
    spec = NotesSpec.from_config({**entry, "path": str(path)})
    if file:
        check_file(path, "set `notes.path` to your notes file(s)", text=False)
    stats = ReadStats()
    for _ in NOTE_READERS.get(spec.format)(replace(spec, blocks=1, categories=None), stats):
        pass


# a format whose row ids are made from its note ids: how to name a row id as the file's own note id
NOTE_IDS: dict[str, Callable[[int], str]] = {}


def iter_notes(spec: NotesSpec, stats: ReadStats | None = None) -> Iterator[pa.Table]:
    """Stream the kept notes as tables with ``NOTE_SCHEMA`` (empty texts are dropped and counted),
    each table's schema metadata naming the file it came from (``clinsent.file``). The rules every
    format keeps, whatever its reader: a text holding a NUL byte stops with the note's id and file
    (:func:`refuse_nul`), and a note id read twice, within a file or across files, stops with the
    file's own id and both files (:func:`check_unique_ids`), both never quoting a text."""
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
    check_listed_once(spec.paths)
    ids: list[np.ndarray] = []
    files: list[np.ndarray] = []
    for index, one in enumerate(spec.paths):
        for table in source(replace(spec, path=one, more_paths=()), stats):
            refuse_nul(table, one)
            ids.append(table["row_id"].to_numpy())
            files.append(np.full(table.num_rows, index, dtype=np.int32))
            nonempty = pc.greater(pc.utf8_length(pc.utf8_trim_whitespace(pc.fill_null(table["text"], ""))), 0)
            kept = table.filter(nonempty)
            stats.skipped_empty += table.num_rows - kept.num_rows
            stats.notes_kept += kept.num_rows
            stats.chars_kept += int(pc.sum(pc.utf8_length(kept["text"])).as_py() or 0)
            if kept.num_rows:
                yield kept.replace_schema_metadata({"clinsent.file": str(one)})
    if spec.blocks is None:  # a whole read (the dry run's reads only the first block of each file)
        check_unique_ids(ids, files, spec)
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


def check_listed_once(paths: list[str]) -> None:
    """Each notes file once in ``notes.path`` (links and ``..`` resolved): a file read twice
    would repeat every note id."""
    import os

    seen: dict[str, str] = {}
    for one in paths:
        real = os.path.realpath(one)
        if real in seen:
            said = one if seen[real] == one else f"{one} (the same file as {seen[real]})"
            raise InputError("config: notes.path", f"{said} is listed twice", "list each notes file once")
        seen[real] = one


def note_id_of(spec: NotesSpec, row_id: int) -> str:
    """A row id as the notes file names the note (MIMIC-IV-Note: its ``note_id``), for errors."""
    return NOTE_IDS.get(spec.format, str)(row_id)


def refuse_nul(table: pa.Table, path: str | Path) -> None:
    """A note holding a NUL byte (a binary file, or text saved as UTF-16/32) stops, wherever it is
    in the file (the dry run reads the first block only), naming its note id and the file."""
    nul = pc.fill_null(pc.match_substring(table["text"], "\x00"), False)
    if pc.any(nul).as_py():
        at = int(np.flatnonzero(nul.to_numpy(zero_copy_only=False))[0])
        raise InputError(
            f"{path}, note id {table['note_id'][at].as_py()}",
            "the note's text holds a NUL byte: binary data, or text saved as UTF-16/32",
            "save the notes as UTF-8 text (iconv -f <its encoding> -t utf-8), or drop the note",
        )


def check_unique_ids(ids: list[np.ndarray], files: list[np.ndarray], spec: NotesSpec) -> None:
    """Every note id once in all the notes' files (they become sentence ids): a repeated one stops,
    named as the file names it (:func:`note_id_of`) with the file(s) it is in."""
    every = np.concatenate(ids) if ids else np.empty(0, dtype=np.int64)
    where = np.concatenate(files) if files else np.empty(0, dtype=np.int32)
    uniq, counts = np.unique(every, return_counts=True)
    if not (counts > 1).any():
        return
    dup = int(uniq[counts > 1][0])
    found = sorted({spec.paths[int(i)] for i in where[every == dup]}, key=spec.paths.index)
    files_said = f"in {found[0]} and in {found[1]}" if len(found) > 1 else f"in {found[0]}"
    raise InputError(
        f"config: notes.path: {found[0]}",
        f"note id {note_id_of(spec, dup)} occurs {int(counts[counts > 1][0])} times ({files_said}; "
        f"{int((counts > 1).sum())} repeated id(s) in all)",
        "note ids must be unique: list each file once, de-duplicate the input, or use a unique id column",
    )


def _categories(stats: ReadStats) -> str:
    return ", ".join(repr(c) for c in stats.filtered_by) if stats.filtered_by else "none"
