"""What the ``tokens`` rule tokenizes of each layout of training source (:func:`tokenize_source`,
:data:`LAYOUTS`), into the token tables of :mod:`clinsent.data.tokens`.

- ``sentences`` (the notes' sentence sets, a sentence corpus): ``text`` by ``sent_id``; with the
  linked entities given, each entity's span as token positions (MED-SE's);
- ``rows`` (training rows: NLI triplets, pairs): every text column, by row number;
- ``documents`` (a documents partition): ``text`` by row number;
- ``definitions`` (the linked entities' ontology definitions): each term's ``definition``, once,
  by ``term_id``.

A source is read and tokenized :data:`BLOCK` rows at a time, with a progress line at least every
:data:`PROGRESS_SECONDS`; the log names counts, never a row's text.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from clinsent.data.encode import TextEncoder, entity_spans
from clinsent.data.tokens import Spans, TokenTable

BLOCK = 100_000  # rows tokenized at a time
PROGRESS_SECONDS = 10.0
NOT_TEXT = ("label",)  # columns of training rows that are not text


@dataclass(frozen=True)
class TokenJob:
    """What one token file is made of (the ``tokens`` job's params: its source and the linked
    entities are its inputs): the source's layout (:func:`layout_of`), the tokenizer's model (a
    folder or a hub id), the length."""

    layout: str
    model: str
    max_length: int


def layout_of(source: str) -> str:
    """The layout of a token source's name (``notes``, ``corpus-<name>``, ``rows-<name>``,
    ``documents-<partition>``, ``definitions``)."""
    if source == "definitions":
        return "definitions"
    if source == "notes" or source.startswith("corpus-"):
        return "sentences"
    head = source.split("-", 1)[0]
    if head in ("rows", "documents"):
        return head
    raise ValueError(f"unknown token source {source!r}")  # the plan's wildcard constraints admit no other


def _tables(
    encoder: TextEncoder, texts: dict[str, list[str]], log: Callable[[str], Any], offsets: bool = False
) -> tuple[dict[str, TokenTable], np.ndarray | None]:
    """Each column's texts tokenized, :data:`BLOCK` rows at a time (progress in the log)."""
    out: dict[str, TokenTable] = {}
    chars: np.ndarray | None = None
    last = time.monotonic()
    for name, column in texts.items():
        parts, spans = [], []
        for a in range(0, len(column), BLOCK):
            table, char = encoder.encode(column[a : a + BLOCK], offsets=offsets)
            parts.append(table)
            spans.append(char)
            if time.monotonic() - last >= PROGRESS_SECONDS:
                log(f"tokens: {name}: {min(a + BLOCK, len(column)):,} of {len(column):,} rows")
                last = time.monotonic()
        out[name] = _joined(parts, encoder)
        if offsets:
            chars = np.concatenate([c for c in spans if c is not None]) if spans else np.zeros((0, 2), np.int32)
    return out, chars


def _joined(parts: list[TokenTable], encoder: TextEncoder) -> TokenTable:
    if not parts:
        return TokenTable(np.zeros(0, np.int32), np.zeros(1, np.int64), np.zeros(0, np.uint8), encoder.encoding)
    lengths = np.concatenate([p.lengths for p in parts])
    return TokenTable(
        np.concatenate([p.ids for p in parts]),
        np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64),
        np.concatenate([p.special for p in parts]),
        encoder.encoding,
    )


def _definitions(encoder: TextEncoder, path: str | Path, linked: Any, log: Callable[[str], Any]) -> Tokenized:
    frame = pd.read_parquet(path, columns=["term_id", "definition"])
    frame = frame[frame["definition"].map(lambda d: isinstance(d, str))].drop_duplicates("term_id")
    frame = frame.sort_values("term_id", kind="stable")
    tables, _ = _tables(encoder, {"definition": frame["definition"].tolist()}, log)
    return frame["term_id"].astype(str).to_numpy(dtype=object), tables, None


def _rows(encoder: TextEncoder, path: str | Path, linked: Any, log: Callable[[str], Any]) -> Tokenized:
    frame = pd.read_parquet(path)
    columns = [c for c in frame.columns if c not in NOT_TEXT and frame[c].dtype == object]
    tables, _ = _tables(encoder, {c: frame[c].astype(str).tolist() for c in columns}, log)
    return np.arange(len(frame), dtype=np.int64), tables, None


def _documents(encoder: TextEncoder, path: str | Path, linked: Any, log: Callable[[str], Any]) -> Tokenized:
    frame = pd.read_parquet(path, columns=["text"])
    tables, _ = _tables(encoder, {"text": frame["text"].astype(str).tolist()}, log)
    return np.arange(len(frame), dtype=np.int64), tables, None


def _sentences(encoder: TextEncoder, path: str | Path, linked: Any, log: Callable[[str], Any]) -> Tokenized:
    frame = pd.read_parquet(path, columns=["sent_id", "text"]).drop_duplicates("sent_id")
    keys = frame["sent_id"].to_numpy(dtype=np.int64)
    tables, chars = _tables(encoder, {"text": frame["text"].astype(str).tolist()}, log, offsets=linked is not None)
    if linked is None or chars is None:
        return keys, tables, None
    entities = pd.read_parquet(linked, columns=["sent_id", "ent_idx", "start", "end"])
    rows = pd.Index(keys).get_indexer(entities["sent_id"].to_numpy())
    entities, rows = entities[rows >= 0], rows[rows >= 0]
    found = (entities[c].to_numpy() for c in ("ent_idx", "start", "end"))
    return keys, tables, entity_spans(tables["text"], chars, rows, *found)


Tokenized = tuple[np.ndarray, dict[str, TokenTable], Spans | None]
# a source's layout -> how it is read and tokenized (see the module)
LAYOUTS: dict[str, Callable[[TextEncoder, str | Path, Any, Callable[[str], Any]], Tokenized]] = {
    "sentences": _sentences,
    "rows": _rows,
    "documents": _documents,
    "definitions": _definitions,
}


def tokenize_source(
    layout: str,
    path: str | Path,
    tokenizer: Any,
    max_length: int,
    linked: str | Path | None = None,
    log: Callable[[str], Any] = print,
) -> Tokenized:
    """(row keys, each text column's table, the entity spans) of one source of ``layout`` (see the module)."""
    if layout not in LAYOUTS:
        raise ValueError(f"unknown token source layout {layout!r}; one of {', '.join(LAYOUTS)}")
    return LAYOUTS[layout](TextEncoder(tokenizer, max_length), path, linked, log)


def describe(keys: np.ndarray, tables: dict[str, TokenTable], spans: Spans | None) -> str:
    """The log's line of a token file: counts only (rows, tokens, rows cut at the length, spans)."""
    parts = []
    for name, t in tables.items():
        cut = int(np.sum(t.lengths >= t.encoding.max_length))
        parts.append(f"{name}: {len(t):,} rows, {int(t.lengths.sum()):,} tokens ({cut:,} at the length cap)")
    if spans is not None:
        lost = int(np.sum(spans.start < 0))
        parts.append(f"{len(spans.row):,} entity spans ({lost:,} cut off by the length)")
    return f"tokens of {len(keys):,} keys: " + "; ".join(parts)
