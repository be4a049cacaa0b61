"""``mimic_iv_note``: MIMIC-IV-Note's discharge.csv.gz and radiology.csv.gz: the note id's
subject, type and sequence give each note its row id; the note type its category.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from clinsent.corpus.note_formats.csv_blocks import MIMIC_IV, optional_int, read_blocks
from clinsent.corpus.notes import (
    NOTE_IDS,
    NOTE_READERS,
    NotesSpec,
    ReadStats,
    check_notes,
    keep_categories,
    note_table,
)
from clinsent.errors import InputError

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


def row_note_id(row_id: int) -> str:
    """The MIMIC-IV ``note_id`` a row id was made from (:func:`note_id_rows` inverted)."""
    key, seq = divmod(int(row_id), 10_000)
    subject, rank = divmod(key, 4)
    return f"{subject}-{list(MIMIC_IV_TYPES)[rank]}-{seq}"


NOTE_IDS["mimic_iv_note"] = row_note_id


@NOTE_READERS.register(
    "mimic_iv_note",
    check=lambda path, entry, where: check_notes(path, entry, file=True),
    reads=("categories", "block_mb"),
)
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
    for cols, row_numbers in read_blocks(path, spec, stats, MIMIC_IV):
        code = pc.utf8_trim_whitespace(cols["note_type"])
        at = pc.index_in(code, value_set=types)
        category = pc.coalesce(pc.take(categories, at), code)
        description = pc.coalesce(pc.take(descriptions, at), code)
        keep = keep_categories(category, spec, stats)
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
        yield note_table(
            note_id_rows(note_id, path, row_numbers[keep.to_numpy(zero_copy_only=False)]),
            note_id,
            cols["text"].filter(keep),
            m,
            optional_int(cols["subject_id"].filter(keep)) if "subject_id" in cols else None,
            optional_int(cols["hadm_id"].filter(keep)) if "hadm_id" in cols else None,
            category.filter(keep),
            description.filter(keep),
        )
