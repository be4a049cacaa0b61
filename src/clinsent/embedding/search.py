"""The nearest rows of an embedded corpus to a query, by inner product (:func:`nearest`).

An embedded corpus (the ``embed`` command's output, or a ``corpus_embeddings`` one) holds unit
vectors when its model ends in ``Normalize`` (every model this pipeline saves): inner product is
then cosine. The search is exact and streams the file a row group at a time, so memory stays at
one group's vectors whatever the corpus's size; each query's best ``top`` are kept as it goes.

**Why no index library.** An exact scan costs rows x dimensions multiply-adds per query (MIMIC-III's
2 million discharge-summary notes at 384 dimensions: 0.8 GFLOP), and reading the file costs more
than that: 500,000 such vectors took 3.3 s for one query read from disk and 0.95 s for ten from
the page cache, against 0.08 s for the products alone (two cores, ``bench/bench_search.py``), so
about 4 to 13 s a call at 2 million rows, whatever the number of queries in it. It needs nothing
beyond numpy and pyarrow. An approximate index (FAISS, hnswlib) answers in milliseconds but adds a compiled
dependency, a build step kept in step with the vectors, and a recall below 1 that a paper's
retrieval numbers would have to state. Batch the queries (``--query`` many times, or a file)
before reaching for one.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from clinsent.config.declare import knob
from clinsent.errors import InputError

ROWS = 65_536  # rows scored at a time
OUTPUT = "give the embed command's --out (or a corpus_embeddings output)"


@dataclass(frozen=True)
class SearchOptions:
    """The search command's settings, declared once (its flags take their types and bounds)."""

    top: int = knob(10, "rows per query", minimum=1)


@dataclass(frozen=True)
class Hit:
    query: int  # the query's number, from 0
    rank: int  # from 1
    id: Any  # the row's id, as the vectors file holds it
    score: float  # inner product (cosine for unit vectors)


def _batches(path: Path, width: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(ids, vectors) of the file, ``ROWS`` at a time, after checking its columns."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        schema = pq.read_schema(path)
    except (OSError, pa.ArrowInvalid) as exc:
        raise InputError(
            path, f"cannot be read as parquet ({type(exc).__name__})", "give the embed command's output"
        ) from None
    vector = schema.field("vector").type if "vector" in schema.names else None
    if "id" not in schema.names or not isinstance(vector, pa.FixedSizeListType):
        raise InputError(
            path, "has no `id` and `vector` (a fixed-size list) columns", "give the embed command's output"
        )
    if vector.list_size != width:
        raise InputError(
            path,
            f"holds {vector.list_size}-dimensional vectors and the query's are {width}-dimensional",
            "search with the model that embedded the corpus",
        )
    for batch in pq.ParquetFile(path).iter_batches(batch_size=ROWS, columns=["id", "vector"]):
        vectors = batch.column("vector").flatten().to_numpy(zero_copy_only=False).reshape(-1, width)
        yield batch.column("id").to_numpy(zero_copy_only=False), vectors.astype(np.float32, copy=False)


def nearest(path: Path, queries: np.ndarray, top: int = 10) -> list[Hit]:
    """Each query's ``top`` rows of the vectors file at ``path`` by inner product, best first
    (ties: the earlier row first), as :class:`Hit` rows, query by query. Per batch of rows, only
    the rows at or above the batch's ``top``-th score (ties kept) meet the best so far."""
    queries = np.atleast_2d(np.asarray(queries, dtype=np.float32))
    best: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # per query: scores, rows, ids
    offset = 0
    for ids, vectors in _batches(Path(path), queries.shape[1]):
        scores = queries @ vectors.T
        if not best:
            empty = (np.empty(0, np.float32), np.empty(0, np.int64), ids[:0])
            best = [empty] * len(queries)
        for q, row_scores in enumerate(scores):
            local = np.arange(len(row_scores))
            if len(row_scores) > top:
                threshold = np.partition(row_scores, len(row_scores) - top)[len(row_scores) - top]
                local = np.flatnonzero(row_scores >= threshold)
            kept_scores, kept_rows, kept_ids = best[q]
            pool = (
                np.concatenate([kept_scores, row_scores[local]]),
                np.concatenate([kept_rows, offset + local]),
                np.concatenate([kept_ids, ids[local]]),
            )
            order = np.lexsort((pool[1], -pool[0]))[:top]  # by score, then by row
            best[q] = (pool[0][order], pool[1][order], pool[2][order])
        offset += len(ids)
    return [
        Hit(q, r + 1, ids_[r].item() if hasattr(ids_[r], "item") else ids_[r], float(scores_[r]))
        for q, (scores_, _, ids_) in enumerate(best)
        for r in range(len(scores_))
    ]
