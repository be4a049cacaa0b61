"""``noteevents_csv``: MIMIC-III's NOTEEVENTS.csv(.gz). TEXT is quoted and multi-line; pyarrow's
CSV reader streams it in blocks of ``block_mb``. Only the configured categories are kept and
ISERROR=1 rows are dropped.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from clinsent.corpus.note_formats.csv_blocks import NOTEEVENTS, int_column, optional_int, read_blocks
from clinsent.corpus.notes import (
    NOTE_READERS,
    NotesSpec,
    ReadStats,
    check_notes,
    keep_categories,
    note_table,
)


@NOTE_READERS.register(
    "noteevents_csv",
    check=lambda path, entry, where: check_notes(path, entry, file=True),
    reads=("categories", "drop_errors", "block_mb"),
)
def iter_noteevents(spec: NotesSpec, stats: ReadStats) -> Iterator[pa.Table]:
    path = Path(spec.path)
    stats.filtered_by = spec.categories
    for cols, row_numbers in read_blocks(path, spec, stats, NOTEEVENTS):
        keep = keep_categories(cols["CATEGORY"], spec, stats)
        if spec.drop_errors and "ISERROR" in cols:
            is_err = pc.equal(pc.utf8_trim_whitespace(cols["ISERROR"]), "1")
            dropped = pc.and_(keep, is_err)
            stats.skipped_iserror += int(pc.sum(dropped).as_py() or 0)
            keep = pc.and_(keep, pc.invert(is_err))
        cols = {k: v.filter(keep) for k, v in cols.items()}
        m = len(cols["TEXT"])
        if m == 0:
            continue
        row_id = int_column(cols["ROW_ID"], path, "ROW_ID", row_numbers[keep.to_numpy(zero_copy_only=False)])
        yield note_table(
            row_id,
            pc.utf8_trim_whitespace(cols["ROW_ID"]),
            cols["TEXT"],
            m,
            optional_int(cols["SUBJECT_ID"]) if "SUBJECT_ID" in cols else None,
            optional_int(cols["HADM_ID"]) if "HADM_ID" in cols else None,
            cols["CATEGORY"],
            cols.get("DESCRIPTION"),
        )


# MIMIC-IV-Note's note types -> MIMIC-III's CATEGORY (so `notes.categories` filters work unchanged)
# and DESCRIPTION (a report or an addendum)
