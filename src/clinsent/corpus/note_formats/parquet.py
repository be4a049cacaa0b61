"""``parquet``: a file with an id column and a text column (``id_column``, ``text_column``);
integer ids are the row ids, other ids are numbered in file order.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa

from clinsent.corpus.notes import (
    NOTE_READERS,
    NotesSpec,
    ReadStats,
    check_notes,
    decode_text,
    note_table,
)
from clinsent.errors import InputError
from clinsent.io.reading import parquet_file, shown_column, shown_columns


@NOTE_READERS.register(
    "parquet",
    check=lambda path, entry, where: check_notes(path, entry, file=True),
    reads=("id_column", "text_column", "category_column"),
)
def iter_parquet(spec: NotesSpec, stats: ReadStats) -> Iterator[pa.Table]:
    path = Path(spec.path)
    pf = parquet_file(path)
    names = pf.schema_arrow.names
    wanted = [spec.id_column, spec.text_column] + ([spec.category_column] if spec.category_column else [])
    missing = [c for c in wanted if c not in names]
    if missing:
        raise InputError(
            path,
            f"missing column(s) {', '.join(map(shown_column, missing))} "
            f"(the file's columns: {shown_columns(names, wanted)})",
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
            text, bad = decode_text(text.cast(pa.binary()))
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
        yield note_table(row_id, ids.cast(pa.string()), text, n, category=category)
