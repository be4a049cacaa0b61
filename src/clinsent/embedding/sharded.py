"""A corpus embedding at MIMIC scale: split into shards, each resumable chunk by chunk.

``corpus_embeddings.<name>.shards: N`` splits the input's rows into N contiguous, deterministic
parts: shard k embeds rows ``[k*n/N, (k+1)*n/N)`` of the n rows, in chunks of ``chunk`` texts,
so every row is in exactly one shard and the shards concatenated in order are the input's
order. Each shard is one job (a GPU slot where embed jobs use a GPU; its own cluster job on
Slurm); one cheap job then streams the parts, row group
by row group, into the one output file ``results/corpus_embeddings/<name>.parquet`` (what
``pandas.read_parquet`` reads, as before), its metadata naming the model, its identity, the
rows and the shards. With one shard the job writes the output directly.

**Resumable.** A shard writes each finished chunk as its own file, atomically (written beside
it and renamed), in a working folder beside the shard's output (``.<part>.work/shard<k>of<N>/``) that is
no declared output, so it survives a killed or preempted job. Started again, the shard skips the
chunks it has and continues after the last one; the chunks are then joined into the shard's
part and the folder removed. The folder is keyed by everything the vectors depend on, by content
(:mod:`clinsent.safety.content`: the model folder's bytes and the input's, the shard, the chunk
size, the columns, the backend): a change empties it. A chunk that cannot be read (a truncated
file) or whose row count is not its rows' in the input is embedded again, with one line. Only the writer
that holds the output's lock (:func:`clinsent.safety.exclusive.writing_lock`) touches the
folder. A chunk's vectors do not depend on what else was run in the job (each chunk is encoded
alone, its texts longest first), so a resumed shard equals an uninterrupted one.

**What the join checks** (:func:`gather_shards`). Each part records the whole input's content key
(in a workflow job, the key file the run's main process wrote: :mod:`clinsent.runner.staleness`;
the job reads it, never hashes a raw input) and its row range of the input (``start:stop/rows``).
The join declares the input ``ancient()`` beside its key file, and compares every part with the
current key and with :func:`row_ranges` of the input's rows now: a part from another version of
the input (rows appended, or edited with the file's old modification time), or cut at other rows,
is named and removed (its shard job embeds it anew on the next run) and the join refused with
exit 2. The joined file is published only when its ids are the input's ids, once each, in order
(the row that differs named by number, never by its id): every input row exactly once.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clinsent.embedding.texts import Chunk, chunks, input_format
from clinsent.errors import InputError


def row_ranges(n_rows: int, shards: int) -> list[range]:
    """The rows of each shard: contiguous, in order, sizes differing by at most one."""
    return [range(k * n_rows // shards, (k + 1) * n_rows // shards) for k in range(shards)]


def count_rows(path: Path, column: str | None, id_column: str | None, chunk: int) -> int:
    """The input's rows: a parquet file's from its metadata, any other by reading it (the same
    reader as the embedding, so the same rows count)."""
    if input_format(path) == "parquet":
        from clinsent.io.reading import parquet_file

        return int(parquet_file(path).metadata.num_rows)
    return sum(len(ids) for ids, _ in chunks(path, chunk, column, id_column))


def work_key(model_key: str, input_key: str, settings: dict[str, Any]) -> dict[str, Any]:
    """What a shard's chunk files depend on (kept in its working folder's ``key.json``): the
    model's content key, the input's (its key file's in a workflow job, else
    :func:`clinsent.safety.content.content_key`) and the settings."""
    return {"model": model_key, "input": input_key, **settings}


def open_work(folder: Path, key: dict[str, Any], private: bool, log: Callable[[str], Any] = print) -> dict[int, int]:
    """The working folder of one shard for ``key`` (emptied when it holds another key's chunks),
    through the guarded writer (:func:`clinsent.safety.guard.claim`: inside what the job owns, never an
    input); owner-only, the folder above it too, when the texts are private. Returns the chunks
    already done (index -> rows); a chunk that cannot be read is removed, with one line."""
    import pyarrow.parquet as pq

    from clinsent.io.files import write_text
    from clinsent.safety.guard import claim

    claim(folder.parent)
    stored = folder / "key.json"
    if folder.exists():
        try:
            same = json.loads(stored.read_text()) == key
        except (OSError, ValueError):
            same = False
        if not same:
            shutil.rmtree(claim(folder))
    mode = 0o700 if private else 0o777  # created only: an existing folder keeps its mode
    folder.parent.mkdir(parents=True, exist_ok=True, mode=mode)
    folder.mkdir(exist_ok=True, mode=mode)
    if not stored.exists():
        write_text(json.dumps(key, sort_keys=True), stored)
    done = {}
    for path in sorted(folder.glob("chunk-*.parquet")):
        try:
            done[int(path.stem.split("-")[1])] = int(pq.read_metadata(path).num_rows)
        except (OSError, ValueError):  # pyarrow's ArrowInvalid is a ValueError: a truncated or damaged file
            log(f"{path.name} of the working folder {folder} cannot be read (a truncated file?): removed, "
                "its chunk is embedded again")  # fmt: skip
            claim(path).unlink()
    return done


def remove_work(folder: Path) -> None:
    """An output's working folder, once the output is written (claimed like every write)."""
    from clinsent.safety.guard import claim

    shutil.rmtree(claim(folder), ignore_errors=True)


def chunk_path(folder: Path, index: int) -> Path:
    return folder / f"chunk-{index:07d}.parquet"


def shard_chunks(
    path: Path, size: int, column: str | None, id_column: str | None, rows: range
) -> Iterator[tuple[int, Chunk]]:
    """(index, chunk) of the rows in ``rows``, ``size`` at a time (index: the chunk's number
    within the shard). Rows before them are read and passed over: they are checked as in any
    run, and the rows stay the input's."""
    ids: list[Any] = []
    texts: list[str] = []
    index, seen = 0, 0
    for chunk_ids, chunk_texts in chunks(path, size, column, id_column):
        start, stop = max(rows.start - seen, 0), min(rows.stop - seen, len(chunk_ids))
        seen += len(chunk_ids)
        if start >= stop:
            if seen >= rows.stop:
                break
            continue
        ids += chunk_ids[start:stop]
        texts += chunk_texts[start:stop]
        while len(ids) >= size:
            yield index, (ids[:size], texts[:size])
            ids, texts, index = ids[size:], texts[size:], index + 1
        if seen >= rows.stop:
            break
    if ids:
        yield index, (ids, texts)


def work_folder(out: Path, shard: int = 0, shards: int = 1) -> Path:
    """Where the job writing ``out`` (a shard's part, or the whole output) keeps its finished
    chunks until ``out`` is written: beside ``out``, no declared output, so it survives a killed
    job and a rerun resumes (:mod:`clinsent.embedding.sharded`)."""
    from clinsent.io.files import work_folder as beside

    return beside(out) / f"shard{shard}of{shards}"


def join_parquet(
    parts: list[Path],
    out: Path,
    meta: dict[str, str],
    private: bool,
    expected: int | None = None,
    ids: Iterator[Any] | None = None,
) -> int:
    """Stream ``parts`` (parquet files of one schema), row group by row group, into ``out``
    (atomic) with ``meta`` added to the schema's metadata; returns the rows written. With
    ``expected``, a file of any other row count is refused before it is published; with ``ids``
    (the input's ids, in order), a file whose ids are not exactly those, once each and in order."""
    import pyarrow.parquet as pq

    from clinsent.embedding.memory import release_arrow
    from clinsent.io.files import atomic_path

    rows, writer = 0, None
    with atomic_path(out, ".parquet", private=private) as tmp:
        try:
            for part in parts:
                source = pq.ParquetFile(part)
                for group in range(source.num_row_groups):
                    table = source.read_row_group(group)
                    if ids is not None:
                        _same_ids(table.column("id").to_pylist(), ids, rows, out)
                    if writer is None:
                        own = {k.decode(): v.decode() for k, v in (table.schema.metadata or {}).items()}
                        schema = table.schema.with_metadata({**own, **meta})
                        writer = pq.ParquetWriter(tmp, schema)
                    writer.write_table(table.replace_schema_metadata(writer.schema.metadata))
                    rows += table.num_rows
                    del table
                    release_arrow()  # each row group's buffers given back: the join holds one group at a time
        finally:
            if writer is not None:
                writer.close()
        if ids is not None and next(ids, _END) is not _END:
            raise InputError(
                out,
                f"the joined parts end at row {rows}, and the input has more rows; it was not written",
                "run the workflow again: a part made from another version of the input is embedded anew",
            )
        if expected is not None and rows != expected:
            raise InputError(
                out,
                f"the joined file holds {rows} rows where its input has {expected}; it was not written",
                "run the same command again: its working folder is checked chunk by chunk",
            )
    return rows


_END = object()


def _same_ids(joined: list[Any], ids: Iterator[Any], before: int, out: Path) -> None:
    """The next ``len(joined)`` ids of the input are ``joined``, or the join stops at the first row
    that differs (named by number, never by its id)."""
    import itertools

    wanted = list(itertools.islice(ids, len(joined)))
    if wanted == joined:
        return
    pairs = zip(joined, wanted, strict=False)
    at = next((i for i, (a, b) in enumerate(pairs) if a != b), min(len(joined), len(wanted)))
    raise InputError(
        out,
        f"row {before + at} of the joined parts is not the input's row {before + at} (its id differs, or the input "
        "has fewer rows); it was not written",
        "run the workflow again: a part made from another version of the input is embedded anew",
    )


@dataclass(frozen=True)
class InputRows:
    """The input a sharded corpus embedding is made from, as its join checks it: the file, its
    content key (its key file's in a workflow job, :func:`clinsent.runner.staleness.read_key`;
    else :func:`clinsent.safety.content.content_key`), the columns and the chunk it is read in."""

    path: Path
    key: str
    column: str | None = None
    id_column: str | None = None
    chunk: int = 1000

    def ids(self) -> Iterator[Any]:
        """The ids of the input's rows, in order (row numbers where it names no id column)."""
        for ids, _ in chunks(self.path, self.chunk, self.column, self.id_column):
            yield from ids


def gather_shards(
    parts: list[Path], out: Path, source: InputRows, private: bool = False, log: Callable[[str], Any] = print
) -> int:
    """The shards' parts, in shard order, into one output (the cheap last job of a sharded
    corpus embedding): each part must come from the same model, from this input (its content
    key) and hold its shard's rows of it (:func:`row_ranges` of the input's rows now); a part
    that does not is stale: it is named, removed (its shard job then embeds it anew) and the join
    refused. The joined file is published only when its ids are the input's, once each, in order."""
    from clinsent.safety.exclusive import writing_lock

    with writing_lock(out):
        return _gather(parts, out, private, source, log)


def _gather(parts: list[Path], out: Path, private: bool, source: InputRows, log: Callable[[str], Any]) -> int:
    import stat

    import pyarrow.parquet as pq

    from clinsent.safety.guard import discard_stale

    # a part written owner-only (its shard's texts were private) makes the whole output so
    private = private or any(not p.stat().st_mode & (stat.S_IRGRP | stat.S_IROTH) for p in parts)
    metas = [{k.decode(): v.decode() for k, v in (pq.read_schema(p).metadata or {}).items()} for p in parts]
    if len({m.get("clinsent.model_identity") for m in metas}) != 1:
        raise InputError(parts[0].parent, "the shards were embedded with different models", "rerun every shard")
    n_rows = count_rows(source.path, source.column, source.id_column, source.chunk)
    stale = [
        part
        for part, meta, rows in zip(parts, metas, row_ranges(n_rows, len(parts)), strict=True)
        if meta.get("clinsent.input_key") != source.key
        or meta.get("clinsent.row_range") != f"{rows.start}:{rows.stop}/{n_rows}"
        or meta.get("clinsent.rows") != str(len(rows))
    ]
    if stale:
        for part in stale:
            discard_stale(part)
        names = ", ".join(p.name for p in stale)
        log(f"removed {len(stale)} stale parts ({names}): made from another version of {source.path}")
        raise InputError(
            out,
            f"{len(stale)} of its {len(parts)} parts ({names}) were embedded from another version of the input "
            f"{source.path} (its content key or its rows differ from what the part records); they were removed and "
            "nothing was joined",
            "run the workflow again: their shard jobs embed them anew",
        )
    first = next((m for m in metas if m.get("clinsent.rows") != "0"), metas[0])
    meta = {k: v for k, v in first.items() if k.startswith("clinsent.")}
    meta.update({"clinsent.rows": str(n_rows), "clinsent.shard": f"all/{len(parts)}"})
    meta["clinsent.row_range"] = f"0:{n_rows}/{n_rows}"  # every row of the input
    kept = [p for p, m in zip(parts, metas, strict=True) if m.get("clinsent.rows") != "0"]
    return join_parquet(kept, out, meta, private, expected=n_rows, ids=source.ids())
