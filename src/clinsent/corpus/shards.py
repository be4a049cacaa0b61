"""Scatter the note stream into N shard files with a stable assignment.

A note goes to shard ``row_id mod N``: the assignment depends only on the note, so adding
notes never moves the others, and the same input read in the same order gives the same
bytes in every shard. Each shard is written as it streams (bounded memory) and all shards
appear together at the end, or none does.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from clinsent.corpus.notes import NOTE_SCHEMA
from clinsent.errors import InputError
from clinsent.io.files import ParquetSink


def shard_names(n_shards: int) -> list[str]:
    """Shard labels ``000``, ``001``, ... used in file names."""
    if n_shards < 1:
        raise InputError("config corpus.shards", f"{n_shards} shards", "use at least 1")
    return [f"{i:03d}" for i in range(n_shards)]


def assign_shards(row_ids: pa.Array, n_shards: int) -> np.ndarray:
    return np.asarray(row_ids.to_numpy(zero_copy_only=False) % n_shards, dtype=np.int64)


def scatter_notes(
    tables: Iterable[pa.Table], out_paths: list[str | Path], source: str = "notes", buffer_bytes: int = 8 << 20
) -> list[int]:
    """Write the notes to ``out_paths`` (one per shard); returns the note count per shard.

    ``buffer_bytes`` is shared by all shards (each writes a row group when its share is
    full), so memory does not grow with the shard count.

    Row ids are unique across the whole input (they become sentence ids): the notes reader
    stops on a repeated one (:func:`clinsent.corpus.notes.check_unique_ids`), and then no shard
    file is written.
    """
    n = len(out_paths)
    group_bytes = max(256 << 10, buffer_bytes // n)
    sinks = [ParquetSink(p, NOTE_SCHEMA, group_bytes) for p in out_paths]
    try:
        for table in tables:
            shard = pa.array(assign_shards(table["row_id"], n))
            for i, sink in enumerate(sinks):
                part = table.filter(pc.equal(shard, i))
                sink.write(part)
            pa.default_memory_pool().release_unused()  # hand freed blocks back: keeps the peak flat
    except BaseException:
        for sink in sinks:
            sink.abort()
        raise
    for sink in sinks:
        sink.close()
    return [s.rows for s in sinks]
