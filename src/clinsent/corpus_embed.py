"""Embed a whole corpus with a trained model (:func:`embed_corpus`): the ``corpus_embed`` jobs, and
``python -m clinsent embed --model DIR --input FILE --out FILE.parquet``
(:mod:`clinsent.embed_command`).

The input is read in chunks (``--chunk`` texts at a time) through the ``texts`` readers
(:mod:`clinsent.texts`: plain text, CSV, TSV, JSON lines, parquet) and each chunk's vectors are
appended to the output as one parquet row group, so memory stays flat whatever the input's
size. The output holds ``id`` and ``vector`` (float32), and ``text`` only with ``--keep-text``;
its schema metadata names the model folder, its modules (pooling, dense, normalize), the vector
size and the input's row count.

The model is loaded as the embed jobs load it (:func:`clinsent.embed.load_encoder`: the layouts
this pipeline writes through transformers alone, any other through sentence-transformers), on
CUDA when present (inside a Snakemake job, on the job's GPU slot). Within a chunk the texts are
encoded longest first, as ``SentenceTransformer.encode`` does, so a batch pads to lengths close
to its own; the vectors are written in the input's order.

Everything that can be checked is checked before the model loads (:func:`check_request`):
``--chunk``, ``--batch-size`` and ``--device``; the input's extension, header, column and first
rows (:func:`clinsent.texts.check`, the same check as the dry run's); the model folder; and the
output, through the guarded writer (:mod:`clinsent.guarded`): never the input or inside the
model folder, and, for vectors of texts others cannot read (the notes, or an owner-only file),
never into an existing folder others can read (created 0700, the file 0600; no existing folder's
mode is changed). A bad row further in stops the run when its chunk is read, naming the file,
the row and the column, never the text, and nothing is left half-written.
"""

from __future__ import annotations

import json
import re
import stat
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from clinsent.corpus_shards import work_folder
from clinsent.errors import InputError
from clinsent.process_memory import peak_rss_mb, release_heap
from clinsent.texts import check as check_texts
from clinsent.texts import chunks

CHUNK = 10_000  # texts per chunk (and per row group of the output)
DEVICE = re.compile(r"^(cpu|cuda(:\d{1,3})?)$")


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


def check_device(device: str | None, where: str = "--device") -> None:
    """``device`` is cpu, cuda or cuda:N, and the machine has it (torch is asked only for cuda)."""
    if device is None or device == "cpu":
        return
    if not DEVICE.match(device):
        from clinsent.errors import shown_value

        raise InputError(where, f"{shown_value(device)} is not a device", "give cpu, cuda or cuda:N (N from 0)")
    import torch

    if not torch.cuda.is_available():
        raise InputError(
            where,
            f"{device}: CUDA is not available here (torch sees no GPU)",
            "give cpu, or run on a machine with a GPU",
        )
    index = int(device.partition(":")[2] or 0)
    if index >= torch.cuda.device_count():
        raise InputError(
            where,
            f"{device}: this machine has {torch.cuda.device_count()} GPU(s) (0 is the first)",
            "give an index among them",
        )


def check_request(
    model_dir: Path,
    source: Path,
    out: Path,
    column: str | None,
    id_column: str | None,
    chunk: int,
    batch_size: int,
    device: str | None,
) -> None:
    """Every check of an embed run that needs no model, in the order a user would fix them."""
    from clinsent.guarded import claim

    for flag, value in (("--chunk", chunk), ("--batch-size", batch_size)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InputError(flag, f"{value!r} is not a positive whole number", f"give {flag} 1 or more")
    check_device(device)
    check_texts(source, {"column": column, "id_column": id_column}, "--input")
    if not (model_dir / "modules.json").is_file():
        raise InputError(
            model_dir,
            "not a saved sentence-transformers model (no modules.json)",
            "--model names a trained run's model folder, e.g. results/models/<method>/<base>/seed0/model",
        )
    if out.is_dir():
        raise InputError(out, "is a folder", "--out names the parquet file to write, e.g. vectors.parquet")
    claim(out, inputs=(source, model_dir))  # never the input, never inside the model folder


def _chunk_table(ids: list[Any], vectors: np.ndarray, texts: list[str] | None) -> Any:
    import pyarrow as pa

    columns = {
        "id": pa.array(ids),
        "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1), pa.float32()), vectors.shape[1]),
    }
    if texts is not None:
        columns["text"] = pa.array(texts, pa.string())
    return pa.table(columns)


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
    private: bool = False,
    results: str | Path | None = None,
    shard: int = 0,
    shards: int = 1,
    backend: str = "torch",
    quantize: str = "none",
) -> dict[str, Any]:
    """Embed ``source``'s texts with the model in ``model_dir`` into ``out`` (parquet); returns the
    run's figures (rows, seconds, sentences per second, peak resident memory). ``shard`` of
    ``shards``: only that contiguous part of the input's rows (:mod:`clinsent.corpus_shards`);
    each finished chunk is kept in :func:`work_folder` until ``out`` is written, so a killed run
    started again resumes after its last chunk. The output is owner-only when ``private`` (the
    workflow's notes sentences) or when others cannot read ``source``; inside ``results`` its
    folder is already owner-only (:mod:`clinsent.phi`), elsewhere
    :func:`clinsent.guarded.private_destination` decides, before the model loads. ``backend``
    ``onnx`` (``quantize`` ``int8``): ONNX Runtime on the CPU (:mod:`clinsent.onnx_backend`)."""

    import pyarrow.parquet as pq

    from clinsent import corpus_shards
    from clinsent.embed import load_encoder
    from clinsent.guarded import private_destination
    from clinsent.io import atomic_path
    from clinsent.onnx_backend import OnnxEncoder, check_backend

    check_backend(backend, quantize, "embed")
    if backend == "onnx" and device not in (None, "cpu"):
        raise InputError("--device", f"{device}: the onnx backend runs on the CPU", "give cpu, or backend torch")
    check_request(model_dir, source, out, column, id_column, chunk, batch_size, device)
    if not 0 <= shard < shards:
        raise InputError("shard", f"{shard} is not a shard of {shards}", "give 0 <= shard < shards")
    if next(chunks(source, chunk, column, id_column), None) is None:  # the first chunk, before the model loads
        raise InputError(source, "no texts", "an input with at least one row")
    private = bool(private) or _owner_only(source)
    if private:
        private_destination(out, results)
    if shards == 1:  # every row: no count needed
        wanted = range(0, sys.maxsize)
    else:
        wanted = corpus_shards.row_ranges(corpus_shards.count_rows(source, column, id_column, chunk), shards)[shard]
    work = work_folder(out, shard, shards)
    settings = {
        "chunk": chunk,
        "shard": shard,
        "shards": shards,
        "column": column,
        "id_column": id_column,
        "backend": backend,
        "quantize": quantize,
    }
    done = set(
        corpus_shards.open_work(
            work, corpus_shards.work_key(model_dir, source, {**settings, "keep_text": keep_text}), private
        )
    )
    resumed = len(done)
    if resumed:
        log(f"resuming shard {shard} of {shards}: {resumed} of its chunks are done")
    modules = json.loads((model_dir / "modules.json").read_text())
    model, start, rows, embedded = None, time.perf_counter(), 0, 0
    for index, (ids, texts) in corpus_shards.shard_chunks(source, chunk, column, id_column, wanted):
        rows += len(ids)
        if index in done:
            continue
        if model is None:
            if backend == "onnx":
                import torch

                model = OnnxEncoder(model_dir, quantize, threads=torch.get_num_threads(), log=log)
            else:
                model = load_encoder(model_dir, device)
        vectors = encode_in_length_order(model, texts, batch_size)
        with atomic_path(corpus_shards.chunk_path(work, index), ".parquet", private=private) as tmp:
            pq.write_table(_chunk_table(ids, vectors, texts if keep_text else None), tmp)
        embedded += len(ids)
        release_heap()
        log(f"embedded {rows} texts of shard {shard} ({embedded / (time.perf_counter() - start):.0f}/s)")
    parts = sorted(work.glob("chunk-*.parquet"))  # this shard's chunks (its own folder, keyed), in order
    if not parts:  # a shard without rows (fewer rows than shards): an empty part the join passes over
        import pyarrow as pa

        empty = pa.table({"id": pa.array([], pa.int64()), "vector": pa.array([], pa.list_(pa.float32()))})
        with atomic_path(out, ".parquet", private=private) as tmp:
            pq.write_table(
                empty.replace_schema_metadata(
                    {"clinsent.rows": "0", "clinsent.model_identity": corpus_shards.model_identity(model_dir)}
                ),
                tmp,
            )
        corpus_shards.remove_work(work.parent)
        return {
            "rows": 0,
            "embedded": 0,
            "resumed_chunks": 0,
            "seconds": 0.0,
            "sentences_per_second": None,
            "peak_rss_mb": peak_rss_mb(),
        }
    dim = int(pq.read_schema(parts[0]).field("vector").type.list_size)
    meta = {
        "clinsent.model": str(model_dir),
        "clinsent.model_identity": corpus_shards.model_identity(model_dir),
        "clinsent.modules": json.dumps(modules),
        "clinsent.pooling": json.dumps(_pooling(model_dir, modules)),
        "clinsent.dim": str(dim),
        "clinsent.rows": str(rows),
        "clinsent.backend": backend if quantize == "none" else f"{backend} {quantize}",
        "clinsent.shard": f"{shard}/{shards}",
    }
    corpus_shards.join_parquet(parts, out, meta, private)
    corpus_shards.remove_work(work.parent)  # this output's own working folder
    seconds = time.perf_counter() - start
    return {
        "rows": rows,
        "embedded": embedded,
        "resumed_chunks": resumed,
        "seconds": round(seconds, 3),
        "sentences_per_second": round(embedded / seconds, 1) if embedded else None,
        "peak_rss_mb": peak_rss_mb(),
    }


def _pooling(model_dir: Path, modules: list[dict[str, Any]]) -> dict[str, Any]:
    """The saved model's pooling module's settings (empty when it has none)."""
    for module in modules:
        config = model_dir / module.get("path", "") / "config.json"
        if module.get("type", "").endswith("Pooling") and config.is_file():
            return dict(json.loads(config.read_text()))
    return {}
