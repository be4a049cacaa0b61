"""Token tables: the text of a training source tokenized once, read memory-mapped, gathered into
padded batches.

The ``tokens`` rule (:mod:`clinsent.data.encode` tokenizes) writes one file per training source,
tokenizer and length: the notes' sentence sets, a sentence corpus, training rows (NLI triplets,
pairs), note documents, the ontology's definitions. A :class:`TokenTable` is one text column of
it: row ``i``'s token ids are ``ids[offsets[i]:offsets[i + 1]]`` (flat int32, int64 offsets),
truncated as the tokenizer truncates at the table's length, its special tokens added, with
``special`` (1 where the tokenizer added a special token) beside them. The notes' sentences also
carry each linked entity's span as token positions (:class:`Spans`).

A train job reads the file memory-mapped (:func:`read_tables`: Arrow IPC, one record batch, so
every column is one buffer in the file) and makes each step's batch with :meth:`TokenTable.gather`:
numpy's fancy indexing into the flat ids, padded to the batch's width, written into buffers the
caller may reuse (page-locked ones on CUDA). No tokenizer call, no Python loop over rows, no
Python list in the step's path. A gathered batch equals the tokenizer's own padded batch
(``tokenizer(texts, padding=True, truncation=True, max_length=L)``: ``input_ids`` and
``attention_mask``; ``tests/train/test_tokens.py``).

Token ids of notes are note text: the files live under the results folder's ``tokens/``, a
note-text folder (:data:`clinsent.phi.protect.NOTE_DIRS`), as owner-only as the sets they come from.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

FORMAT = 1  # the file layout's version (in its metadata)
SPECIAL = ":special"  # a text column's special-tokens column: "<column>:special"
ENTITY_COLUMNS = ("entities:ent_idx", "entities:start", "entities:end")  # per sentence, its entities' spans
NO_SPAN = -1  # an entity truncated away (no token of it within the length)


@dataclass(frozen=True)
class Encoding:
    """How a table was tokenized: the tokenizer's fingerprint (:func:`clinsent.data.encode.fingerprint`),
    the length its rows were truncated at, and the padding id a gather fills with."""

    tokenizer: str
    max_length: int
    pad_id: int

    def check(self, other: Encoding, where: str) -> None:
        """Raise a ValueError naming ``where`` when ``other`` (what a loss expects) differs."""
        if self != other:
            raise ValueError(
                f"{where}: the token table was made with tokenizer {self.tokenizer[:12]} at length "
                f"{self.max_length}, the model expects tokenizer {other.tokenizer[:12]} at length "
                f"{other.max_length}; rerun the tokens rule (its params name both)"
            )


class TokenTable:
    """One text column of a source, tokenized (see the module). ``ids`` int32, ``offsets`` int64
    (rows + 1), ``special`` uint8 beside ``ids``; all may be memory-mapped (read-only)."""

    def __init__(self, ids: np.ndarray, offsets: np.ndarray, special: np.ndarray, encoding: Encoding) -> None:
        self.ids, self.offsets, self.special, self.encoding = ids, offsets, special, encoding
        self.starts = offsets[:-1]
        self.lengths = np.diff(offsets)

    def __len__(self) -> int:
        return len(self.lengths)

    def width(self, rows: np.ndarray) -> int:
        """The longest of ``rows`` (in tokens)."""
        return int(self.lengths[rows].max()) if len(rows) else 0

    def gather(
        self,
        rows: np.ndarray,
        width: int,
        ids: np.ndarray | None = None,
        mask: np.ndarray | None = None,
        special: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """``rows``' token ids padded to ``width`` ([len(rows), width] int64, the padding id after
        each row) and their attention mask (1 on the tokens); written into ``ids`` and ``mask`` when
        given (reused buffers), and the special-tokens mask (padding counted special, as the
        tokenizer's ``return_special_tokens_mask`` gives it) into ``special`` when given."""
        n = len(rows)
        starts, lengths = self.starts[rows], self.lengths[rows]
        positions = np.arange(width)
        real = positions < lengths[:, None]  # [n, width]
        # each row's last token repeated over its padding, then overwritten with the padding id
        # (an empty row's index is one before its start: gathered, then overwritten too)
        flat = starts[:, None] + np.minimum(positions, lengths[:, None] - 1)
        ids = np.empty((n, width), np.int64) if ids is None else ids
        mask = np.empty((n, width), np.int64) if mask is None else mask
        np.copyto(ids, self.ids[flat])
        ids[~real] = self.encoding.pad_id
        np.copyto(mask, real)
        if special is not None:
            np.copyto(special, self.special[flat])
            special[~real] = 1
        return ids, mask


@dataclass(frozen=True)
class Spans:
    """The linked entities of a sentence table as token positions: entity ``k`` of sentence row
    ``row[k]`` (its ``ent_idx``) covers tokens ``start[k]:end[k]`` (the tokens whose characters
    overlap the entity's; :data:`NO_SPAN` for both where truncation cut it off)."""

    row: np.ndarray
    ent_idx: np.ndarray
    start: np.ndarray
    end: np.ndarray

    def lookup(self, rows: np.ndarray, ent_idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(start, end) of each (sentence row, ent_idx) pair; :data:`NO_SPAN` for a pair the table
        lacks (``ent_idx`` -1: a sentence drawn without an entity)."""
        start = np.full(len(rows), NO_SPAN, np.int64)
        end = np.full(len(rows), NO_SPAN, np.int64)
        if not len(self.row) or not len(rows):
            return start, end
        key = self.row.astype(np.int64) * _ENTITIES + self.ent_idx
        want = np.asarray(rows, np.int64) * _ENTITIES + np.asarray(ent_idx, np.int64)
        order = np.argsort(key, kind="stable")
        at = order[np.minimum(np.searchsorted(key[order], want), len(key) - 1)]
        found = (key[at] == want) & (np.asarray(ent_idx) >= 0)
        start[found], end[found] = self.start[at[found]], self.end[at[found]]
        return start, end


_ENTITIES = 1 << 20  # entities per sentence, at most (a key's factor)


@dataclass
class Tables:
    """A source's token file read: each text column's table, the row keys (``sent_id``, row number
    or ``term_id``), the entity spans where the source has them, and the file's metadata."""

    columns: dict[str, TokenTable]
    keys: np.ndarray
    spans: Spans | None
    meta: dict[str, Any]

    def find(self, keys: Any) -> np.ndarray:
        """The table rows of ``keys`` (-1 for a key the table lacks, None among them)."""
        import pandas as pd

        return np.asarray(pd.Index(self.keys).get_indexer(pd.Index(keys, dtype=object)), dtype=np.int64)

    def rows_of(self, keys: Any, where: str) -> np.ndarray:
        """The table rows of ``keys``; a ValueError naming ``where`` for a key the table lacks (the
        token file is older than its source)."""
        rows = self.find(keys)
        if np.any(rows < 0):
            missing = int(np.argmax(rows < 0))
            raise ValueError(
                f"{where}: {int(np.sum(rows < 0))} of {len(rows)} rows have no tokens (row {missing} of "
                "them names a key the token file lacks); rerun the tokens rule"
            )
        return rows


@dataclass(frozen=True)
class TokenFile:
    """One token file a train job reads: its source (``notes``, ``corpus-<name>``,
    ``rows-<name>``, ``documents-<partition>``, ``definitions``), its tokenizer (a base model's key,
    or ``model-<hash>`` of another model: :func:`clinsent.paths.tokenizer_key`), its length and the
    text columns it holds."""

    source: str
    tokenizer: str
    max_length: int
    columns: tuple[str, ...] = ("text",)

    def path(self, results: str) -> str:
        from clinsent.paths import TOKENS, Tree

        return Tree(results).file(
            TOKENS, token_source=self.source, tokenizer=self.tokenizer, token_length=self.max_length
        )


def _list_array(flat: np.ndarray, offsets: np.ndarray) -> Any:
    import pyarrow as pa

    return pa.LargeListArray.from_arrays(pa.array(offsets, pa.int64()), pa.array(flat))


def write_tables(
    path: str | Path,
    keys: np.ndarray,
    columns: Mapping[str, TokenTable],
    spans: Spans | None = None,
    meta: Mapping[str, Any] | None = None,
    private: bool = False,
) -> None:
    """The token file: one Arrow IPC record batch (every column one buffer, so a reader maps it),
    written through the guarded writer (atomic; owner-only when ``private``)."""
    import pyarrow as pa

    from clinsent.io.files import atomic_path

    encodings = {c: t.encoding for c, t in columns.items()}
    arrays: dict[str, Any] = {"key": pa.array(keys)}
    for name, table in columns.items():
        arrays[name] = _list_array(table.ids, table.offsets)
        arrays[name + SPECIAL] = _list_array(table.special, table.offsets)
    if spans is not None:
        n = len(keys)
        order = np.argsort(spans.row, kind="stable")
        counts = np.bincount(spans.row, minlength=n) if len(spans.row) else np.zeros(n, np.int64)
        offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        for col, values in zip(ENTITY_COLUMNS, (spans.ent_idx, spans.start, spans.end), strict=True):
            arrays[col] = _list_array(values[order].astype(np.int32), offsets)
    info = {
        "format": FORMAT,
        "encodings": {c: vars(e) for c, e in encodings.items()},
        **(dict(meta) if meta else {}),
    }
    batch = pa.record_batch(list(arrays.values()), names=list(arrays))
    schema = batch.schema.with_metadata({"clinsent.tokens": json.dumps(info, sort_keys=True)})
    with atomic_path(path, ".arrow", private=private) as tmp:
        with pa.OSFile(str(tmp), "wb") as sink, pa.ipc.new_file(sink, schema) as writer:
            writer.write_batch(batch.replace_schema_metadata(schema.metadata))


def read_tables(path: str | Path) -> Tables:
    """A token file, memory-mapped: its columns' flat arrays are views of the mapped file."""
    import pyarrow as pa

    source = pa.memory_map(str(path), "r")
    reader = pa.ipc.open_file(source)
    meta = json.loads(reader.schema.metadata[b"clinsent.tokens"])
    if meta.get("format") != FORMAT:
        raise ValueError(f"{path}: token file format {meta.get('format')}, this version reads {FORMAT}; rerun it")
    batch = reader.get_batch(0) if reader.num_record_batches else None
    if batch is None or reader.num_record_batches != 1:
        raise ValueError(f"{path}: a token file holds one record batch; rerun the tokens rule")

    def flat(name: str) -> tuple[np.ndarray, np.ndarray]:
        arr = batch.column(name)
        return arr.values.to_numpy(zero_copy_only=True), arr.offsets.to_numpy(zero_copy_only=True)

    columns = {}
    for name, enc in meta["encodings"].items():
        ids, offsets = flat(name)
        special, _ = flat(name + SPECIAL)
        columns[name] = TokenTable(ids, offsets, special, Encoding(**enc))
    keys = batch.column("key").to_numpy(zero_copy_only=False)
    spans = None
    if ENTITY_COLUMNS[0] in batch.schema.names:
        ent_idx, offsets = flat(ENTITY_COLUMNS[0])
        row = np.repeat(np.arange(len(keys)), np.diff(offsets))
        spans = Spans(row, ent_idx, flat(ENTITY_COLUMNS[1])[0], flat(ENTITY_COLUMNS[2])[0])
    return Tables(columns, keys, spans, meta)
