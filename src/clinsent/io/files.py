"""The writers, the one way out: an output appears complete or not at all (write to a temp file,
then rename). Each asks the guard first (:func:`clinsent.safety.guard.claim`: inside what the
caller owns, never over an input, never through a link, never into a system folder) and holds the
output's one-writer lock for the whole write (:func:`clinsent.safety.exclusive.writing_lock`: a
second writer is refused at once). No other module of the package opens a file for writing
(``tests/workflow/test_one_writer.py``)."""

from __future__ import annotations

import json
import logging
import math
import os
import re
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import pandas as pd

from clinsent.errors import WRITE_ERRORS, InputError, OutputError
from clinsent.io.textfile import json_line, text_lines
from clinsent.safety.exclusive import writing_lock
from clinsent.safety.guard import claim

log = logging.getLogger(__name__)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _write_errno(exc: BaseException) -> int | None:
    """The errno of a failed write: an ``OSError``'s own, or the one a library puts only in its
    message (pyarrow: ``[errno 28] ...``; safetensors' Rust writer, a plain error: ``IoError(Os {
    code: 28, kind: StorageFull, ...})``)."""
    if isinstance(exc, OSError) and exc.errno:
        return int(exc.errno)
    found = re.search(r"\[errno (\d+)\]|\bOs \{ code: (\d+)|\bos error (\d+)", str(exc), re.IGNORECASE)
    return int(next(g for g in found.groups() if g)) if found else None


@contextmanager
def writing(path: str | Path) -> Iterator[None]:
    """Turn a failed write inside the block (a full disk, a quota, a read-only or unwritable
    folder, an I/O error) into an :class:`~clinsent.errors.OutputError` that names ``path``,
    the output being written (the OS names the temporary file, or nothing)."""

    try:
        yield
    except OutputError:
        raise
    except Exception as exc:  # an OSError, or a library's own error that carries the OS's (a model's save)
        code = _write_errno(exc)
        if code not in WRITE_ERRORS:
            raise
        raise OutputError(path, code) from exc


@contextmanager
def atomic_path(path: str | Path, suffix: str = "", private: bool = False) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; rename it onto ``path`` only if the block succeeds.
    A failed write names ``path`` (:func:`writing`); the temporary file is removed either way.
    ``private``: the file is 0600 (note-derived text or vectors), else the umask's usual mode."""
    target = claim(path)
    with writing(target), writing_lock(target):
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=suffix or ".tmp", dir=target.parent)
        os.close(fd)
        tmp_path = Path(tmp)
        try:
            yield tmp_path
            if not private:
                os.chmod(tmp_path, 0o666 & ~_umask())  # mkstemp makes 0600; give the usual file mode
            os.replace(tmp_path, target)
        finally:
            tmp_path.unlink(missing_ok=True)


@contextmanager
def atomic_folder(path: str | Path) -> Iterator[Path]:
    """Yield a folder path beside ``path`` (not yet made: the block makes it, a copytree or a
    library's save does) that replaces ``path`` only if the block succeeds; a failed block leaves
    ``path`` as it was and nothing beside it. The one way a step stages a folder output (the
    release copies, the MedCAT packs). A failed write names ``path`` (:func:`writing`)."""
    import shutil

    target = claim(path)
    with writing(target), writing_lock(target):
        target.parent.mkdir(parents=True, exist_ok=True)
        box = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".staging", dir=target.parent))
        try:
            staged = box / target.name
            yield staged
            if not staged.is_dir():
                raise FileNotFoundError(f"{target}: the step made no folder to put in its place")
            if target.is_dir() and not target.is_symlink():
                shutil.rmtree(target)
            else:
                target.unlink(missing_ok=True)
            staged.rename(target)
        finally:
            shutil.rmtree(box, ignore_errors=True)


def work_folder(target: str | Path) -> Path:
    """Where the step writing ``target`` keeps its unfinished work until ``target`` is written (a
    training run's checkpoints without a checkpoint folder, a corpus embedding's finished chunks):
    ``.<name>.work`` beside it, no declared output, so it survives a killed job."""
    target = Path(target)
    return target.parent / f".{target.name}.work"


def write_parquet(df: pd.DataFrame, path: str | Path) -> None:
    with atomic_path(path, ".parquet") as tmp:
        df.to_parquet(tmp, index=False, compression="zstd")


def write_text(text: str, path: str | Path) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def append_lines(lines: Iterable[str], path: str | Path) -> None:
    """Lines appended to a log the step writes as it goes (a training job's live curve, read while
    it runs): claimed as every output is, under its one-writer lock, flushed at once. A log is the
    one output not written whole: a reader sees each line as it comes."""
    target = claim(path)
    with writing(target), writing_lock(target):
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(target, "a", encoding="utf-8") as handle:
            handle.writelines(lines)
            handle.flush()


def finite_json(obj: Any) -> tuple[Any, list[str]]:
    """``obj`` with every NaN or infinite number (Python or numpy) replaced by None, and the
    keys where that happened (``a.b.0``): JSON has no NaN, and ``NaN`` in a file breaks strict readers."""
    bad: list[str] = []

    def walk(value: Any, key: str) -> Any:
        if isinstance(value, dict):
            return {k: walk(v, f"{key}.{k}" if key else str(k)) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [walk(v, f"{key}.{i}" if key else str(i)) for i, v in enumerate(value)]
        if hasattr(value, "item") and callable(value.item) and getattr(value, "shape", None) == ():
            value = value.item()  # numpy scalar
        if isinstance(value, float) and not math.isfinite(value):
            bad.append(key or "(the value)")
            return None
        return value

    return walk(obj, ""), bad


def write_json(obj: Any, path: str | Path) -> None:
    """Strict JSON (no NaN or Infinity): a non-finite number is written as null and logged with
    its key, since it means the value is undefined (a correlation of constant scores, a metric of
    an absent class) rather than a number."""
    clean, bad = finite_json(obj)
    if bad:
        log.warning(
            "%s: %s not a finite number (undefined, e.g. a correlation of constant scores or a metric "
            "of an absent class); written as null",
            path,
            ", ".join(bad[:10]) + (" ..." if len(bad) > 10 else ""),
        )
    write_text(json.dumps(clean, indent=2, sort_keys=True, default=str, allow_nan=False) + "\n", path)


def write_csv(df: pd.DataFrame, path: str | Path) -> None:
    with atomic_path(path, ".csv") as tmp:
        df.to_csv(tmp, index=False)


class ParquetSink:
    """Stream tables into one parquet file; it appears at ``path`` only on :meth:`close`.

    Rows are buffered until ``group_bytes`` of Arrow data, then written as one row group, so
    memory stays bounded and the same input in the same order gives the same bytes.
    """

    def __init__(self, path: str | Path, schema: Any, group_bytes: int = 32 << 20) -> None:
        import pyarrow.parquet as pq

        self.path = claim(path)
        self._lock = ExitStack()  # the one-writer lock, held from here to close or abort
        with writing(self.path):
            self._lock.enter_context(writing_lock(self.path))
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".parquet", dir=self.path.parent)
                os.close(fd)
                self._tmp = Path(tmp)
                try:
                    self._writer = pq.ParquetWriter(self._tmp, schema, compression="zstd")
                except BaseException:
                    self._tmp.unlink(missing_ok=True)
                    raise
            except BaseException:
                self._lock.close()
                raise
        self.schema = schema
        self.group_bytes = group_bytes
        self._buffer: list[Any] = []
        self._buffered = 0
        self.rows = 0

    def write(self, table: Any) -> None:
        """Append a pyarrow Table (or a pandas DataFrame) with this sink's schema."""
        import pyarrow as pa

        if isinstance(table, pd.DataFrame):
            table = pa.Table.from_pandas(table[self.schema.names], schema=self.schema, preserve_index=False)
        else:
            table = table.select(self.schema.names).cast(self.schema)
        if table.num_rows == 0:
            return
        self._buffer.append(table)
        self._buffered += table.nbytes
        self.rows += table.num_rows
        if self._buffered >= self.group_bytes:
            self._flush()

    def _flush(self) -> None:
        import pyarrow as pa

        if self._buffer:
            with writing(self.path):
                self._writer.write_table(pa.concat_tables(self._buffer))
        self._buffer, self._buffered = [], 0

    def close(self) -> None:
        """Write what is buffered and move the file into place."""
        try:
            self._flush()
            with writing(self.path):
                self._writer.close()
                os.chmod(self._tmp, 0o666 & ~_umask())
                os.replace(self._tmp, self.path)
        finally:
            self._tmp.unlink(missing_ok=True)
            self._lock.close()

    def abort(self) -> None:
        """Drop everything written so far; nothing appears at ``path``."""
        try:
            self._writer.close()
        except OSError:
            pass  # a full disk can fail the close too: the file is dropped all the same
        finally:
            self._tmp.unlink(missing_ok=True)
            self._lock.close()

    def __enter__(self) -> ParquetSink:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()


def jsonl_objects(path: str | Path, fix: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) of each non-blank line of a UTF-8 JSON-lines file; a line that is
    not a JSON object, or holds a string that is no text (:func:`clinsent.io.textfile.json_line`),
    stops with ``file:line`` and ``fix`` (never the line's text)."""

    for line_no, line in enumerate(text_lines(path), start=1):
        if not line.strip():
            continue
        obj = json_line(line, f"{path}:{line_no}", fix)  # every string in it text (no \u0000, no lone surrogate)
        if not isinstance(obj, dict):
            raise InputError(f"{path}:{line_no}", "not a JSON object", fix)
        yield line_no, obj
