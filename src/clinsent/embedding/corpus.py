"""Embed a whole corpus with a trained model (:func:`embed_corpus`): the ``corpus_embed`` jobs, and
``python -m clinsent embed --model DIR --input FILE --out FILE.parquet``
(:mod:`clinsent.embedding.command`).

The input is read in chunks (``--chunk`` texts at a time) through the ``texts`` readers
(:mod:`clinsent.embedding.texts`: plain text, CSV, TSV, JSON lines, parquet) and each chunk's vectors are
appended to the output as one parquet row group, so memory stays flat whatever the input's
size. The output holds ``id`` and ``vector`` (float32), and ``text`` only with ``--keep-text``;
its schema metadata names the model folder, its modules (pooling, dense, normalize), the vector
size and the input's row count.

The model is loaded as the embed jobs load it (:func:`clinsent.embedding.vectors.load_encoder`: the layouts
this pipeline writes through transformers alone, any other through sentence-transformers), on
CUDA when present (inside a Snakemake job, on the job's GPU slot). Within a chunk the texts are
encoded longest first, as ``SentenceTransformer.encode`` does, so a batch pads to lengths close
to its own; the vectors are written in the input's order.

Everything that can be checked is checked before the model loads (:func:`check_request`):
``--chunk``, ``--batch-size`` and ``--device``; the input's extension, header, column and first
rows (:func:`clinsent.embedding.texts.check`, the same check as the dry run's); the model folder; and the
output, through the guarded writer (:mod:`clinsent.safety.guard`): a ``.parquet`` file, never the
input or inside the model folder, never through a link, never at the root of the file system or
in a system folder, and, for vectors of private texts (the notes, a file the caller marks as
derived from them, or a file nobody else can reach: :mod:`clinsent.safety.reach`), never into an
existing folder others can reach (created 0700, the file 0600; no existing folder's mode is
changed). A bad row further in stops the run when its chunk is read, naming the file, the row
and the column, never the text, and nothing is left half-written.

**One writer.** The run holds its output's lock from the checks to the end
(:func:`clinsent.safety.exclusive.writing_lock`): a second run writing the same output is refused
at once, naming the process that holds it, and never touches the first one's working folder.
The rows of the written file are counted against the input's before it is published.
"""

from __future__ import annotations

import dataclasses
import json
import re
import sys
import time
import typing
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from clinsent.config.sections import CorpusEmbeddingEntry
from clinsent.embedding.memory import flat_heap, peak_rss_mb, release_arrow, release_heap
from clinsent.embedding.sharded import work_folder
from clinsent.embedding.texts import check as check_texts
from clinsent.embedding.texts import check_unique_ids, chunks
from clinsent.errors import InputError
from clinsent.models.complete import check_complete

_DECLARED = CorpusEmbeddingEntry(run="", input="")  # a corpus_embeddings entry's declared defaults
MEMORY = typing.get_args(typing.get_type_hints(CorpusEmbeddingEntry)["memory"])  # fast, flat: as declared
_NOT_IN_CHUNKS = ("device", "results", "cache", "batch_size", "private", "quantize_tolerance", "memory", "input_key")
QUALITY_SAMPLE = 256  # texts a quantized (int8, bf16) job also embeds with fp32, to measure what it costs
DEVICE = re.compile(r"^(cpu|cuda(:\d{1,3})?)$")


def encode_in_length_order(model: Any, texts: list[str], batch_size: int) -> np.ndarray:
    """``model.encode`` of ``texts`` longest first (batches pad to lengths close to their own),
    returned in the input's order. One ``encode`` per batch, its vectors copied into one array at
    once: the encoders' own lists of per-batch vectors, held to the end of a chunk, landed between
    the next batches' activations in the C heap and pinned it (measured on the torch path with
    MiniLM, 2 threads: the peak from 10,000 to 30,000 sentences grew from 804 to 944 MB with
    them and stayed at 798 without, at the same rate)."""
    order = np.argsort([-len(t) for t in texts], kind="stable")
    out = np.empty((0, 0), dtype=np.float32)
    for start in range(0, len(texts), batch_size):
        rows = order[start : start + batch_size]
        vectors = np.asarray(model.encode([texts[i] for i in rows], batch_size=batch_size), dtype=np.float32)
        if start == 0:
            out = np.empty((len(texts), vectors.shape[1]), dtype=np.float32)
        out[rows] = vectors
    return out


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
    from clinsent.safety.guard import claim

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
    check_complete(model_dir, "--model")  # its weights, config and tokenizer (clinsent.models.complete)
    if out.is_dir():
        raise InputError(out, "is a folder", "--out names the parquet file to write, e.g. vectors.parquet")
    from clinsent.safety.places import check_output_file

    check_output_file(out, str(out))
    claim(out, inputs=(source, model_dir))  # never the input, never inside the model folder, never through a link
    if out.suffix != ".parquet":
        raise InputError(
            out,
            "the output is written as parquet, and this name does not end in .parquet",
            f"name the file {out.with_suffix('.parquet').name} (read it with pandas.read_parquet)",
        )


def _chunk_table(ids: list[Any], vectors: np.ndarray, texts: list[str] | None) -> Any:
    import pyarrow as pa

    columns = {
        "id": pa.array(ids),
        "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1), pa.float32()), vectors.shape[1]),
    }
    if texts is not None:
        columns["text"] = pa.array(texts, pa.string())
    return pa.table(columns)


@dataclass(frozen=True)
class EmbedOptions:
    """How a corpus is embedded, in one object (:func:`embed_corpus`): a ``corpus_embeddings``
    entry's embedding keys (their defaults and meaning declared once, in
    :class:`clinsent.config.sections.CorpusEmbeddingEntry`; the embed command's flags take the same)
    and what a run adds (the device, the results folder, the shard, the cache)."""

    column: str | None = _DECLARED.column
    id_column: str | None = _DECLARED.id_column
    keep_text: bool = _DECLARED.keep_text
    chunk: int = _DECLARED.chunk  # texts per chunk (and per row group of the output)
    batch_size: int = _DECLARED.batch_size
    private: bool = _DECLARED.private
    shards: int = _DECLARED.shards  # this many contiguous parts (clinsent.embedding.sharded) ...
    backend: str = _DECLARED.backend
    quantize: str = _DECLARED.quantize
    quantize_tolerance: float = _DECLARED.quantize_tolerance
    quantize_max_distance: float = _DECLARED.quantize_max_distance  # int8 (openvino): its bound, no quality set
    quantize_max_drop: float = _DECLARED.quantize_max_drop  # ... and with one
    memory: str = _DECLARED.memory  # fast or flat (clinsent.embedding.memory.flat_heap)
    device: str | None = None  # cpu, cuda or cuda:N (None: cuda when present)
    results: str | Path | None = None  # a workflow job's results folder (its note-text folders, its cache)
    shard: int = 0  # ... of which this job embeds this one
    cache: Path | None = None  # the ONNX export's cache folder (None: clinsent.safety.cache's default)
    # the input's content key as the run recorded it (a workflow job's raw input: its key file, read, not
    # computed: clinsent.runner.staleness); None: computed here (clinsent.safety.content.content_key)
    input_key: str | None = None

    def chunk_settings(self) -> dict[str, Any]:
        """The options a finished chunk depends on (its working folder's key): all but those that
        change no chunk's rows or vectors (the device, the folders, the batch size, the modes)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name not in _NOT_IN_CHUNKS}

    @classmethod
    def from_entry(cls, entry: CorpusEmbeddingEntry, **run: Any) -> EmbedOptions:
        """The options of a ``corpus_embeddings`` entry (in a job: read back from its params,
        :meth:`clinsent.plan.files.RunFiles.corpus_params`), with the run's own (``run``: they
        take the place of the entry's)."""
        own = {f.name for f in dataclasses.fields(cls)} & {f.name for f in dataclasses.fields(entry)}
        return cls(**{k: getattr(entry, k) for k in own if k not in run}, **run)


def embed_corpus(
    model_dir: Path,
    source: Path,
    out: Path,
    options: EmbedOptions = EmbedOptions(),
    log: Any = print,
    quality_set: Any = None,
) -> dict[str, Any]:
    """Embed ``source``'s texts with the model in ``model_dir`` into ``out`` (parquet); returns the
    run's figures (rows; seconds spent reading, embedding and writing, the model's load and export
    excluded; sentences per second of them; peak resident memory). ``options.shard``
    of ``options.shards``: only that contiguous part of the input's rows
    (:mod:`clinsent.embedding.sharded`); each finished chunk is kept in :func:`work_folder` until
    ``out`` is written, so a killed run started again resumes after its last chunk. The output is
    owner-only when ``options.private`` (the workflow's notes sentences, or a file the caller
    marks as derived from them) or when nobody else can reach ``source``; inside
    ``options.results`` its folder is already owner-only (:mod:`clinsent.phi`), elsewhere
    :func:`clinsent.safety.guard.private_destination` decides, before the model loads. ``backend``
    ``onnx`` (``quantize`` ``int8``): ONNX Runtime on the CPU
    (:mod:`clinsent.embedding.onnx_backend`); ``openvino`` (``quantize`` ``bf16``): OpenVINO on the
    same export (:mod:`clinsent.embedding.openvino_backend`); the export kept in ``options.cache``
    (by default :func:`clinsent.safety.cache.default_cache`; inside ``results``,
    ``<results>/cache``). A quantized embedding (int8, bf16) measures itself against fp32 on a
    sample of its texts (:func:`_quantized_quality`), and on ``quality_set`` (an eval set's task:
    its texts, ``score_and_items`` and ``headline``) where one is given (:func:`_paired_difference`)."""
    from clinsent.embedding.onnx_backend import check_backend
    from clinsent.safety.exclusive import writing_lock
    from clinsent.safety.guard import private_destination

    o = options
    check_backend(o.backend, o.quantize, "embed")
    if o.memory not in MEMORY:
        raise InputError("memory", f"{o.memory!r} is not a way to keep the heap", f"give one of {', '.join(MEMORY)}")
    if o.backend != "torch" and o.device not in (None, "cpu"):
        raise InputError(
            "--device", f"{o.device}: the {o.backend} backend runs on the CPU", "give cpu, or backend torch"
        )
    check_request(model_dir, source, out, o.column, o.id_column, o.chunk, o.batch_size, o.device)
    if o.cache is not None:  # a place to write, whatever the backend (the torch one keeps no cache)
        from clinsent.safety.places import check_write_root

        check_write_root(o.cache, "--cache", "cache folder")
    if not 0 <= o.shard < o.shards:
        raise InputError("shard", f"{o.shard} is not a shard of {o.shards}", "give 0 <= shard < shards")
    if next(chunks(source, o.chunk, o.column, o.id_column), None) is None:  # the first chunk, before the model loads
        raise InputError(source, "no texts", "an input with at least one row")
    check_unique_ids(source, o.column, o.id_column)  # every id once, before the model loads
    o = replace(o, private=_is_private(source, o.private))
    if o.private:  # before anything is created beside the output: its missing folders are made owner-only
        private_destination(out, o.results)
    with writing_lock(out):  # the one writer of `out` (and of its working folder) from here to the end
        return _embed_locked(model_dir, source, out, o, log, quality_set)


def _is_private(source: Path, marked: bool) -> bool:
    """Private texts: marked so (the notes, a file derived from them), or nobody else can reach the file."""
    from clinsent.safety.reach import others_can_read

    return bool(marked) or not others_can_read(source)


def _cache(out: Path, results: str | Path | None, cache: Path | None) -> Path:
    """The ONNX export's cache folder, made ready (:mod:`clinsent.safety.cache`)."""
    import os

    from clinsent import paths
    from clinsent.safety.cache import cache_folder, default_cache

    if cache is not None:
        return cache_folder(cache, "--cache")
    if results is not None and Path(os.path.realpath(out)).is_relative_to(Path(os.path.realpath(results))):
        return cache_folder(Path(results) / paths.CACHE, "config: results", owned=True)
    return cache_folder(default_cache(out), "--cache")


def _embed_locked(
    model_dir: Path, source: Path, out: Path, o: EmbedOptions, log: Any, quality_set: Any
) -> dict[str, Any]:
    import pyarrow.parquet as pq

    from clinsent.embedding import sharded as corpus_shards
    from clinsent.io.files import atomic_path
    from clinsent.safety.content import content_key

    if o.memory == "flat":  # before the model loads: its blocks and every batch's are mapped apart
        log("memory: flat (large blocks mapped apart)" if flat_heap() else "memory: flat needs glibc: as fast here")
    cache_dir = _cache(out, o.results, o.cache) if o.backend != "torch" else None
    wanted, n_rows = _wanted_rows(source, o)
    model_key = content_key(model_dir)
    input_key = o.input_key or content_key(source)
    # what a part proves it embedded (clinsent.embedding.sharded.gather_shards checks it): the input and its rows
    made_from = {"clinsent.input_key": input_key}
    if n_rows is not None:
        made_from["clinsent.row_range"] = f"{wanted.start}:{wanted.stop}/{n_rows}"
    work = work_folder(out, o.shard, o.shards)
    key = corpus_shards.work_key(model_key, input_key, o.chunk_settings())
    done = corpus_shards.open_work(work, key, o.private, log)
    model, quality = None, None
    if o.quantize != "none":  # what quantization costs this job's own texts, measured before it embeds
        model, quality = _quantized(model_dir, source, o, (cache_dir, model_key), wanted, log, quality_set)
    start, rows, embedded, resumed = time.perf_counter(), 0, 0, 0
    for index, (ids, texts) in corpus_shards.shard_chunks(source, o.chunk, o.column, o.id_column, wanted):
        rows += len(ids)
        if done.get(index) == len(ids):
            resumed += 1
            continue
        if index in done:
            log(f"chunk {index} of the working folder holds {done[index]} rows where the input has {len(ids)}: "
                "embedding it again")  # fmt: skip
        if not embedded:  # its first chunk to embed (a quantized job's model is loaded already)
            if resumed:
                log(f"resuming shard {o.shard} of {o.shards}: {resumed} of its chunks are done")
            if model is None:  # loaded here, out of the rate's seconds (a quantized job's was loaded first)
                loading = time.perf_counter()
                model = _load(model_dir, o.device, o.backend, o.quantize, cache_dir, model_key, log)
                start += time.perf_counter() - loading
        vectors = encode_in_length_order(model, texts, o.batch_size)
        with atomic_path(corpus_shards.chunk_path(work, index), ".parquet", private=o.private) as tmp:
            pq.write_table(_chunk_table(ids, vectors, texts if o.keep_text else None), tmp)
        embedded += len(ids)
        release_heap()
        release_arrow()
        rate = embedded / (time.perf_counter() - start)
        log(f"embedded {rows} texts of shard {o.shard} of {o.shards} ({rate:.0f}/s)")
    if not embedded and resumed:
        log(f"resuming shard {o.shard} of {o.shards}: all {resumed} of its chunks are done")
    parts = sorted(work.glob("chunk-*.parquet"))  # this shard's chunks (its own folder, keyed), in order
    if not parts:  # a shard without rows (fewer rows than shards): an empty part the join passes over
        _write_empty(out, {"clinsent.model_identity": model_key, **made_from}, o.private)
        corpus_shards.remove_work(work.parent)
        return _figures(0, 0, 0, 0.0, None)
    meta = _metadata(model_dir, model_key, int(pq.read_schema(parts[0]).field("vector").type.list_size), rows, o)
    meta.update(made_from)
    if quality is not None:
        meta["clinsent.quality"] = json.dumps(quality)
    corpus_shards.join_parquet(parts, out, meta, o.private, expected=rows)
    corpus_shards.remove_work(work.parent)  # this output's own working folder
    return _figures(rows, embedded, resumed, time.perf_counter() - start, quality)


def _figures(rows: int, embedded: int, resumed: int, seconds: float, quality: dict[str, Any] | None) -> dict[str, Any]:
    """A job's figures (:func:`embed_corpus`'s return)."""
    return {
        "rows": rows,
        "embedded": embedded,
        "resumed_chunks": resumed,
        "seconds": round(seconds, 3),
        "sentences_per_second": round(embedded / seconds, 1) if embedded else None,
        "peak_rss_mb": peak_rss_mb(),
        **({"quality": quality} if quality is not None else {}),
    }


def _quantized(
    model_dir: Path,
    source: Path,
    o: EmbedOptions,
    cached: tuple[Path | None, str],
    wanted: range,
    log: Any,
    quality_set: Any,
) -> tuple[Any, dict[str, Any]]:
    """A quantized job's model, loaded before it embeds, and what quantization costs on this
    job's own texts (and on ``quality_set``, an eval set's task), against the fp32 model, which
    is not held while the job embeds. ``cached``: the export's cache folder and the model's key."""
    from clinsent.embedding.int8_bound import BoundSpec

    cache_dir, model_key = cached
    sample, bound = None, None
    if o.backend == "openvino" and o.quantize == "int8":  # made under a bound: the quality set's, else the input's
        sample = _calibration(source, o)
        bound = (
            BoundSpec(o.quantize_max_drop, task=quality_set)
            if quality_set is not None
            else BoundSpec(o.quantize_max_distance, texts=tuple(_held_back(source, o)))
        )
    model = _load(model_dir, o.device, o.backend, o.quantize, cache_dir, model_key, log, sample, bound)
    reference = _load(model_dir, o.device, o.backend, "none", cache_dir, model_key, log)
    quality = _quantized_quality(model, reference, source, o, wanted, log)
    if getattr(model, "made", None):
        quality["int8"] = model.made  # the bound, the products kept in f32, the drop measured
    if quality_set is not None:
        quality["eval_set"] = _paired_difference(model, reference, quality_set, o, log)
    return model, quality


def _quantized_quality(
    model: Any, reference: Any, source: Path, o: EmbedOptions, wanted: range, log: Any
) -> dict[str, Any]:
    """The quantized model's vectors against fp32's on up to :data:`QUALITY_SAMPLE` of this job's
    texts (spread over its first chunk): their mean and largest cosine distance, logged in one line
    (counts and distances only) and a warning above ``o.quantize_tolerance``."""
    import logging

    from clinsent.embedding import sharded as corpus_shards

    first = next(corpus_shards.shard_chunks(source, o.chunk, o.column, o.id_column, wanted), None)
    texts = list(first[1][1]) if first is not None else []  # (index, (ids, texts)) of its first chunk
    sample = texts[:: max(1, len(texts) // QUALITY_SAMPLE)][:QUALITY_SAMPLE]
    if not sample:  # a shard without rows
        return {"against": "fp32", "texts": 0}
    a, b = model.encode(sample, o.batch_size), reference.encode(sample, o.batch_size)
    distance = 1 - (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    mean, worst = float(distance.mean()), float(distance.max())
    quality = {
        "against": "fp32",
        "texts": len(sample),
        "mean_cosine_distance": round(mean, 6),
        "max_cosine_distance": round(worst, 6),
        "tolerance": o.quantize_tolerance,
    }
    ran = _backend_ran(o)
    log(f"{ran} against fp32 on {len(sample)} of its texts: mean cosine distance {mean:.6f} (max {worst:.6f})")
    if mean > o.quantize_tolerance:
        logging.getLogger(__name__).warning(
            "%s vectors are %.4f (mean cosine distance) from fp32's on %d of this job's texts, above the tolerance "
            "%s (quantize_tolerance): score them on an eval set before use, or embed with quantize: none",
            o.quantize, mean, len(sample), o.quantize_tolerance,
        )  # fmt: skip
    return quality


def _calibration(source: Path, o: EmbedOptions) -> list[str]:
    """The texts a static int8 graph is calibrated on: spread over the whole input's first chunk
    (not the shard's: every shard of one input quantizes alike), offset by half a step from the
    places the quality sample takes (:func:`_quantized_quality`)."""
    from clinsent.embedding.openvino_backend import CALIBRATION

    first = next(chunks(source, o.chunk, o.column, o.id_column), None)
    texts = list(first[1]) if first is not None else []
    step = max(2, len(texts) // CALIBRATION)
    return (texts[step // 2 :: step] or texts)[:CALIBRATION]


def _held_back(source: Path, o: EmbedOptions) -> list[str]:
    """Up to :data:`QUALITY_SAMPLE` texts of the input's first chunk that the calibration
    (:func:`_calibration`) does not take: what an int8 graph's bound measures it on."""
    from clinsent.embedding.openvino_backend import CALIBRATION

    first = next(chunks(source, o.chunk, o.column, o.id_column), None)
    texts = list(first[1]) if first is not None else []
    step = max(2, len(texts) // CALIBRATION)
    taken = set(range(step // 2, len(texts), step)) if len(texts) > 1 else set()
    left = [t for i, t in enumerate(texts) if i not in taken] or texts
    return left[:: max(1, len(left) // QUALITY_SAMPLE)][:QUALITY_SAMPLE]


def _paired_difference(model: Any, reference: Any, task: Any, o: EmbedOptions, log: Any) -> dict[str, Any]:
    """The quantized and the fp32 vectors scored on an eval set's task: its headline metric for
    both, their difference and its 95% paired-bootstrap interval (the same resamples of the set's
    items for both, :func:`clinsent.evaluation.bootstrap.paired_interval`); one log line of numbers."""
    from clinsent.evaluation.bootstrap import SEED, bootstrap_items, paired_interval

    texts = task.texts()
    scored = {}
    for name, encoder in (("quantized", model), ("fp32", reference)):
        metrics, items = task.score_and_items(texts, encode_in_length_order(encoder, texts, o.batch_size))
        replicates = bootstrap_items(items, SEED).replicates[task.headline] if items is not None else np.array([])
        scored[name] = (float(metrics[task.headline]), replicates)
    (value, mine), (base, theirs) = scored["quantized"], scored["fp32"]
    interval = paired_interval(mine, theirs)
    record = {
        "name": task.set_name,
        "metric": task.headline,
        "quantized": round(value, 4),
        "fp32": round(base, 4),
        "difference": round(value - base, 4),
        "interval": [round(x, 4) for x in interval] if interval else None,
    }
    shown = f"[{interval[0]:+.4f}, {interval[1]:+.4f}]" if interval else "(no interval)"
    log(f"{_backend_ran(o)} on eval set {task.set_name}: {task.headline} {value:.4f} against fp32's {base:.4f} "
        f"(difference {value - base:+.4f}, 95% paired interval {shown})")  # fmt: skip
    return record


def _wanted_rows(source: Path, o: EmbedOptions) -> tuple[range, int | None]:
    """The input's rows this job embeds: all of them (no count needed), or its shard's contiguous
    part, with the input's row count."""
    from clinsent.embedding import sharded as corpus_shards

    if o.shards == 1:
        return range(0, sys.maxsize), None
    counted = corpus_shards.count_rows(source, o.column, o.id_column, o.chunk)
    return corpus_shards.row_ranges(counted, o.shards)[o.shard], counted


def _metadata(model_dir: Path, model_key: str, dim: int, rows: int, o: EmbedOptions) -> dict[str, str]:
    """The output's metadata: the model (its folder, identity, modules and pooling), the vectors'
    size, the rows, the backend and the shard."""
    modules = json.loads((model_dir / "modules.json").read_text())
    return {
        "clinsent.model": str(model_dir),
        "clinsent.model_identity": model_key,
        "clinsent.modules": json.dumps(modules),
        "clinsent.pooling": json.dumps(_pooling(model_dir, modules)),
        "clinsent.dim": str(dim),
        "clinsent.rows": str(rows),
        "clinsent.backend": _backend_ran(o),
        "clinsent.shard": f"{o.shard}/{o.shards}",
    }


def _backend_ran(o: EmbedOptions) -> str:
    """The backend and the precision that ran: ``torch``, ``onnx``, ``onnx int8``, ``openvino f32``
    or ``openvino bf16`` (f32 where bf16 was asked of a CPU without bf16 instructions)."""
    if o.backend == "openvino":
        from clinsent.embedding.openvino_backend import precision

        return f"openvino {precision(o.quantize)}"
    return o.backend if o.quantize == "none" else f"{o.backend} {o.quantize}"


def _load(
    model_dir: Path,
    device: str | None,
    backend: str,
    quantize: str,
    cache: Path | None,
    model_key: str,
    log: Any,
    calibration: list[str] | None = None,
    bound: Any = None,
) -> Any:
    """The encoder of a run: ONNX Runtime's or OpenVINO's (the export in ``cache``; OpenVINO's int8
    calibrated on ``calibration`` and made within ``bound``), or the torch model's."""
    if backend in ("onnx", "openvino"):
        import torch

        from clinsent.embedding.onnx_backend import OnnxEncoder
        from clinsent.embedding.openvino_backend import OpenVinoEncoder

        assert cache is not None
        threads = torch.get_num_threads()
        if backend == "onnx":
            return OnnxEncoder(model_dir, quantize, cache, threads=threads, log=log, model_key=model_key)
        return OpenVinoEncoder(
            model_dir, quantize, cache, calibration, bound, threads=threads, log=log, model_key=model_key
        )
    from clinsent.embedding.vectors import load_encoder

    return load_encoder(model_dir, device)


def _write_empty(out: Path, made_from: dict[str, str], private: bool) -> None:
    """The part of a shard without rows (fewer rows than shards): its model and input, no vectors."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from clinsent.io.files import atomic_path

    empty = pa.table({"id": pa.array([], pa.int64()), "vector": pa.array([], pa.list_(pa.float32()))})
    meta = {"clinsent.rows": "0", **made_from}
    with atomic_path(out, ".parquet", private=private) as tmp:
        pq.write_table(empty.replace_schema_metadata(meta), tmp)


def _pooling(model_dir: Path, modules: list[dict[str, Any]]) -> dict[str, Any]:
    """The saved model's pooling module's settings (empty when it has none)."""
    for module in modules:
        config = model_dir / module.get("path", "") / "config.json"
        if module.get("type", "").endswith("Pooling") and config.is_file():
            return dict(json.loads(config.read_text()))
    return {}
