"""Embed a whole corpus with a trained model: ``python -m clinsent embed --model DIR --input FILE
--out FILE.parquet``.

The input is read in chunks (``--chunk`` texts at a time) and each chunk's vectors are appended
to the output as one parquet row group, so memory stays flat whatever the input's size. Inputs:
plain text (one text per line, ids are line numbers from 0), CSV or TSV (``--column``; ids from
``--id-column`` or row numbers), JSON lines (``--column`` names the field) and parquet
(``--column``). The output holds ``id`` and ``vector`` (float32), and ``text`` only with
``--keep-text``; its schema metadata names the model folder, its modules (pooling, dense,
normalize), the vector size and the input's row count. An input that others cannot read (note
text should be owner-only: :mod:`clinsent.phi`) gives an owner-only output.

The model is loaded as the embed jobs load it (:func:`clinsent.embed.load_encoder`: the layouts
this pipeline writes through transformers alone, any other through sentence-transformers), on
CUDA when present (inside a Snakemake job, on the job's GPU slot). Within a chunk the texts are
encoded longest first, as ``SentenceTransformer.encode`` does, so a batch pads to lengths close
to its own; the vectors are written in the input's order.

Bad input stops before the model loads: a missing file, column or format, an empty input, an
empty text in the first chunk (named by its row number, never by its content); an empty text in
a later chunk stops the run when its chunk is read, and nothing is left half-written.
"""

from __future__ import annotations

import argparse
import csv
import itertools
import json
import os
import stat
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from clinsent.errors import InputError

FORMATS = {".txt": "text", ".csv": "csv", ".tsv": "tsv", ".jsonl": "jsonl", ".json": "jsonl", ".parquet": "parquet"}
CHUNK = 10_000  # texts per chunk (and per row group of the output)

Chunk = tuple[list[Any], list[str]]  # (ids, texts)


def input_format(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix not in FORMATS:
        raise InputError(
            path,
            f"unknown input format {suffix or '(no extension)'}",
            f"an input ending in one of {', '.join(sorted(FORMATS))}",
        )
    return FORMATS[suffix]


Row = tuple[Any, str]  # (id, text)


def _text_rows(path: Path, column: str | None, id_column: str | None) -> Iterator[Row]:
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle):
            yield number, line.rstrip("\n").rstrip("\r")


def _delimited_rows(delimiter: str) -> Any:
    def rows(path: Path, column: str | None, id_column: str | None) -> Iterator[Row]:
        with path.open(encoding="utf-8", newline="") as handle:
            reader = csv.DictReader(handle, delimiter=delimiter)
            _check_columns(path, list(reader.fieldnames or []), column, id_column)
            for number, row in enumerate(reader):
                yield (row[id_column] if id_column else number), row[str(column)] or ""

    return rows


def _jsonl_rows(path: Path, column: str | None, id_column: str | None) -> Iterator[Row]:
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(
                    path, f"line {number + 1} is not JSON ({exc.msg})", "one JSON object per line"
                ) from None
            missing = [c for c in (column, id_column) if c and c not in record]
            if missing:
                raise InputError(
                    path,
                    f"line {number + 1} has no field {missing[0]!r}",
                    "--column and --id-column name fields every line has",
                )
            yield (record[id_column] if id_column else number), record[str(column)] or ""


def _parquet_rows(path: Path, column: str | None, id_column: str | None) -> Iterator[Row]:
    import pyarrow.parquet as pq

    table = pq.ParquetFile(path)
    _check_columns(path, table.schema_arrow.names, column, id_column)
    number = 0
    for batch in table.iter_batches(batch_size=CHUNK, columns=[c for c in (column, id_column) if c]):
        texts = batch.column(str(column)).to_pylist()
        ids = batch.column(id_column).to_pylist() if id_column else range(number, number + len(texts))
        number += len(texts)
        yield from zip(ids, (t or "" for t in texts), strict=True)


def _check_columns(path: Path, names: list[str], column: str | None, id_column: str | None) -> None:
    for flag, name in (("--column", column), ("--id-column", id_column)):
        if name is not None and name not in names:
            raise InputError(path, f"no column {name!r} ({flag})", f"one of {', '.join(names) or '(none)'}")


NEEDS_COLUMN = {"text": False, "csv": True, "tsv": True, "jsonl": True, "parquet": True}  # texts: a named column
READERS = {
    "text": _text_rows,
    "csv": _delimited_rows(","),
    "tsv": _delimited_rows("\t"),
    "jsonl": _jsonl_rows,
    "parquet": _parquet_rows,
}


def chunks(path: Path, size: int = CHUNK, column: str | None = None, id_column: str | None = None) -> Iterator[Chunk]:
    """(ids, texts) of ``path``, ``size`` texts at a time; an empty text stops with its row number."""
    kind = input_format(path)
    if NEEDS_COLUMN[kind] and not column:
        raise InputError(path, f"a {kind} input needs a column", "--column names the texts' column or field")
    rows = READERS[kind](path, column, id_column)
    seen = 0
    while chunk := list(itertools.islice(rows, size)):
        ids, texts = [r[0] for r in chunk], [r[1] for r in chunk]
        empty = next((i for i, t in enumerate(texts) if not str(t).strip()), None)
        if empty is not None:
            raise InputError(
                path,
                f"row {seen + empty} ({column or 'line'}) is empty",
                "drop empty rows (rows are numbered from 0, after any header)",
            )
        seen += len(texts)
        yield ids, texts


def encode_in_length_order(model: Any, texts: list[str], batch_size: int) -> np.ndarray:
    """``model.encode`` of ``texts`` longest first (batches pad to lengths close to their own),
    returned in the input's order."""
    order = np.argsort([-len(t) for t in texts], kind="stable")
    vectors = np.asarray(model.encode([texts[i] for i in order], batch_size=batch_size), dtype=np.float32)
    out = np.empty_like(vectors)
    out[order] = vectors
    return out


def _owner_only(path: Path) -> bool:
    """Whether others cannot read ``path`` (its text stays private, so its vectors do too)."""
    return not path.stat().st_mode & (stat.S_IROTH | stat.S_IRGRP)


def embed_corpus(
    model_dir: Path,
    source: Path,
    out: Path,
    column: str | None = None,
    id_column: str | None = None,
    keep_text: bool = False,
    chunk: int = CHUNK,
    batch_size: int = 64,
    device: str | None = None,
    log: Any = print,
    private: bool | None = None,
) -> dict[str, Any]:
    """Embed ``source``'s texts with the model in ``model_dir`` into ``out`` (parquet); returns the
    run's figures (rows, seconds, sentences per second, peak resident memory). ``private``: an
    owner-only output (None: when others cannot read ``source``; the workflow passes True for
    the notes' sentences)."""
    import resource

    import pyarrow as pa
    import pyarrow.parquet as pq

    from clinsent.embed import load_encoder
    from clinsent.io import atomic_path

    if not source.is_file():
        raise InputError(source, "no such file", "--input names a text, CSV, TSV, JSON lines or parquet file")
    if not (model_dir / "modules.json").is_file():
        raise InputError(
            model_dir,
            "not a saved sentence-transformers model (no modules.json)",
            "--model names a trained run's model folder, e.g. results/models/<method>/<base>/seed0/model",
        )
    batches = chunks(source, chunk, column, id_column)
    first = next(batches, None)  # bad input in the first chunk stops here, before the model loads
    if first is None:
        raise InputError(source, "no texts", "an input with at least one row")
    private = _owner_only(source) if private is None else private
    if private:
        out.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.chmod(out.parent, 0o700)
    model = load_encoder(model_dir, device)
    modules = json.loads((model_dir / "modules.json").read_text())
    start, rows, writer = time.perf_counter(), 0, None
    with atomic_path(out, ".parquet") as tmp:
        try:
            for ids, texts in itertools.chain([first], batches):
                vectors = encode_in_length_order(model, texts, batch_size)
                columns = {
                    "id": pa.array(ids),
                    "vector": pa.FixedSizeListArray.from_arrays(
                        pa.array(vectors.reshape(-1), pa.float32()), vectors.shape[1]
                    ),
                }
                if keep_text:
                    columns["text"] = pa.array(texts, pa.string())
                table = pa.table(columns)
                if writer is None:
                    meta = {
                        "clinsent.model": str(model_dir),
                        "clinsent.modules": json.dumps(modules),
                        "clinsent.pooling": json.dumps(_pooling(model_dir, modules)),
                        "clinsent.dim": str(vectors.shape[1]),
                    }
                    writer = pq.ParquetWriter(tmp, table.schema.with_metadata(meta))
                writer.write_table(table)
                rows += len(texts)
                log(f"embedded {rows} texts ({rows / (time.perf_counter() - start):.0f}/s)")
        finally:
            if writer is not None:
                writer.close()
    if private:
        os.chmod(out, 0o600)
    seconds = time.perf_counter() - start
    return {
        "rows": rows,
        "seconds": round(seconds, 3),
        "sentences_per_second": round(rows / seconds, 1),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def _pooling(model_dir: Path, modules: list[dict[str, Any]]) -> dict[str, Any]:
    """The saved model's pooling module's settings (empty when it has none)."""
    for module in modules:
        config = model_dir / module.get("path", "") / "config.json"
        if module.get("type", "").endswith("Pooling") and config.is_file():
            return dict(json.loads(config.read_text()))
    return {}


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m clinsent embed", description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True, type=Path, help="a saved model folder (a trained run's model/)")
    ap.add_argument("--input", required=True, type=Path, help="text (one per line), CSV, TSV, JSON lines or parquet")
    ap.add_argument("--out", required=True, type=Path, help="the parquet file to write (id, vector)")
    ap.add_argument("--column", help="the texts' column or field (CSV, TSV, JSON lines, parquet)")
    ap.add_argument("--id-column", help="the ids' column or field (default: row numbers from 0)")
    ap.add_argument("--keep-text", action="store_true", help="write the texts beside their vectors")
    ap.add_argument("--chunk", type=int, default=CHUNK, help="texts read and written at a time (memory)")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--device", default=None, help="cpu, cuda or cuda:N (default: cuda when present)")
    args = ap.parse_args(argv)
    try:
        figures = embed_corpus(
            args.model,
            args.input,
            args.out,
            args.column,
            args.id_column,
            args.keep_text,
            args.chunk,
            args.batch_size,
            args.device,
            log=lambda line: print(line, file=sys.stderr),
        )
    except InputError as exc:
        print(f"embed: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(figures))
    return 0
