"""What a search over an embedded corpus costs (``python -m clinsent search``,
:func:`clinsent.embedding.search.nearest`): random unit vectors written as the embed command
writes them, searched once with one query (the file read from disk) and once with ten (the file
in the page cache), beside numpy's plain matrix product over the same vectors held in memory.

    python bench/bench_search.py [--rows 500000] [--dims 384] [--out bench/results]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from clinsent.embedding.search import nearest

REPO = Path(__file__).resolve().parents[1]
MIMIC_NOTES = 2_000_000  # MIMIC-III's discharge summaries, about


def write(path: Path, rows: int, dims: int, rng: np.random.Generator) -> np.ndarray:
    """``rows`` random unit vectors as the embed command's parquet (row groups of 10,000); a
    sample of them is returned for the in-memory reference."""
    writer = None
    for start in range(0, rows, 100_000):
        v = rng.standard_normal((min(100_000, rows - start), dims), dtype=np.float32)
        v /= np.linalg.norm(v, axis=1, keepdims=True)
        column = pa.FixedSizeListArray.from_arrays(pa.array(v.reshape(-1)), dims)
        table = pa.table({"id": np.arange(start, start + len(v)), "vector": column})
        writer = writer or pq.ParquetWriter(path, table.schema)
        writer.write_table(table, row_group_size=10_000)
    assert writer is not None
    writer.close()
    return v


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=500_000)
    ap.add_argument("--dims", type=int, default=384)
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "results")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    queries = rng.standard_normal((10, args.dims), dtype=np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "vectors.parquet"
        last = write(path, args.rows, args.dims, rng)
        fd = os.open(path, os.O_RDONLY)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)  # read from disk, where the kernel lets it go
        os.close(fd)
        t0 = time.perf_counter()
        nearest(path, queries[:1], 10)
        one = time.perf_counter() - t0
        t0 = time.perf_counter()
        nearest(path, queries, 10)
        ten = time.perf_counter() - t0
    t0 = time.perf_counter()
    for _ in range(args.rows // len(last)):
        np.argpartition(-(queries @ last.T), 10, axis=1)
    plain = time.perf_counter() - t0
    scale = MIMIC_NOTES / args.rows
    lines = [
        "# Search over an embedded corpus (`python bench/bench_search.py`)",
        "",
        f"{args.rows:,} random unit vectors of {args.dims} dimensions, {os.cpu_count()} cores; seconds per call.",
        "",
        "| call | seconds | scaled to 2 million rows |",
        "|---|---:|---:|",
        f"| one query, the file read from disk | {one:.2f} | {one * scale:.1f} |",
        f"| ten queries, the file in the page cache | {ten:.2f} | {ten * scale:.1f} |",
        f"| numpy's product and top 10 of ten queries, vectors in memory (the floor) | {plain:.2f} "
        f"| {plain * scale:.1f} |",
    ]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "search.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
