"""Texts to token tables (:mod:`clinsent.data.tokens`) with a fast tokenizer's own batch encode.

:class:`TextEncoder` holds its own instance of the Rust tokenizer (``tokenizers.Tokenizer``), set
once to truncate as the Hugging Face tokenizer does at the encoder's length, never padded, never
changed after: ``encode_batch`` releases the interpreter lock while it encodes, several threads
may call it at once, and its encodings go straight into flat numpy arrays (the Python wrapper's
padded lists and their conversion to tensors, most of a batch's preparation before, are not
used). It is what the ``tokens`` rule tokenizes a source with, and what the objectives whose text
changes at every step (the text augmentations' second view, DeCLUTR's spans) encode with; its
tables equal the Hugging Face tokenizer's ``input_ids`` and special-tokens mask row for row
(``tests/train/test_tokens.py``). A slow (Python) tokenizer is called as it is.

:func:`entity_spans` maps each linked entity's characters to the token positions it covers (the
tokens whose offsets overlap it; special tokens never do), as MED-SE maps MedCAT's character
offsets through the tokenizer's offset mapping.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from clinsent.data.tokens import NO_SPAN, Encoding, Spans, TokenTable

CHUNK = 8192  # texts per encode_batch call (bounds the encodings held at once)


def fingerprint(tokenizer: Any) -> str:
    """The sha256 of what decides a tokenizer's ids: the fast tokenizer's model, normalizer,
    pre-tokenizer, post-processor and added tokens (its JSON without the truncation and padding
    a call sets), or a slow tokenizer's class and vocabulary."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None:
        spec = json.loads(backend.to_str())
        spec.pop("truncation", None)
        spec.pop("padding", None)
    else:
        spec = {"class": type(tokenizer).__name__, "vocab": sorted(tokenizer.get_vocab().items())}
    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()


def encoding_of(tokenizer: Any, max_length: int) -> Encoding:
    """What a table made with ``tokenizer`` at ``max_length`` records (:class:`Encoding`)."""
    pad = tokenizer.pad_token_id
    return Encoding(fingerprint(tokenizer), int(max_length), int(pad if pad is not None else 0))


class TextEncoder:
    """Texts to :class:`TokenTable` rows with ``tokenizer``'s own batch encode (see the module)."""

    def __init__(self, tokenizer: Any, max_length: int) -> None:
        self.tokenizer, self.max_length = tokenizer, int(max_length)
        self.encoding = encoding_of(tokenizer, max_length)
        backend = getattr(tokenizer, "backend_tokenizer", None)
        self.backend = None
        if backend is not None:
            from tokenizers import Tokenizer

            own = Tokenizer.from_str(backend.to_str())  # its settings are this encoder's alone
            own.no_padding()
            own.enable_truncation(
                self.max_length, stride=0, strategy="longest_first", direction=tokenizer.truncation_side
            )
            self.backend = own

    def _encodings(self, texts: list[str], offsets: bool) -> tuple[list[list[int]], list[list[int]], list[Any]]:
        if self.backend is not None:
            encs = self.backend.encode_batch(texts, add_special_tokens=True)
            return (
                [e.ids for e in encs],
                [e.special_tokens_mask for e in encs],
                [e.offsets for e in encs] if offsets else [],
            )
        out = self.tokenizer(
            texts,
            truncation=True,
            max_length=self.max_length,
            return_special_tokens_mask=True,
            return_offsets_mapping=offsets,
            return_attention_mask=False,
            return_token_type_ids=False,
        )
        return out["input_ids"], out["special_tokens_mask"], out.get("offset_mapping", [])

    def encode(self, texts: Sequence[str], offsets: bool = False) -> tuple[TokenTable, np.ndarray | None]:
        """``texts`` as one table, and (``offsets``) each token's character span ``[tokens, 2]``."""
        ids: list[np.ndarray] = []
        special: list[np.ndarray] = []
        spans: list[np.ndarray] = []
        lengths: list[np.ndarray] = []
        texts = list(texts)
        for a in range(0, len(texts), CHUNK):
            got_ids, got_special, got_offsets = self._encodings(texts[a : a + CHUNK], offsets)
            lengths.append(np.fromiter(map(len, got_ids), np.int64, len(got_ids)))
            ids.append(_flat(got_ids, np.int32))
            special.append(_flat(got_special, np.uint8))
            if offsets:
                spans.append(
                    _flat([[x for pair in row for x in pair] for row in got_offsets], np.int32).reshape(-1, 2)
                )
        size = np.concatenate(lengths) if lengths else np.zeros(0, np.int64)
        table = TokenTable(
            np.concatenate(ids) if ids else np.zeros(0, np.int32),
            np.concatenate([[0], np.cumsum(size)]).astype(np.int64),
            np.concatenate(special) if special else np.zeros(0, np.uint8),
            self.encoding,
        )
        char_spans = (np.concatenate(spans) if spans else np.zeros((0, 2), np.int32)) if offsets else None
        return table, char_spans


def _flat(rows: list[list[int]], dtype: Any) -> np.ndarray:
    total = sum(map(len, rows))
    return np.fromiter((x for row in rows for x in row), dtype, total)


def entity_spans(
    table: TokenTable,
    char_spans: np.ndarray,
    rows: np.ndarray,
    ent_idx: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
) -> Spans:
    """Each entity (sentence row ``rows[k]``, characters ``start[k]:end[k]``) as the token
    positions ``[first, last + 1)`` of the tokens whose characters overlap it (MED-SE's span
    mapping: a token overlaps when it is not empty, ends after the entity starts and starts
    before it ends; special tokens, whose offsets are (0, 0), never do). :data:`NO_SPAN` where
    truncation cut the entity off."""
    rows = np.asarray(rows, np.int64)
    first = np.full(len(rows), NO_SPAN, np.int64)
    last = np.full(len(rows), NO_SPAN, np.int64)
    for a in range(0, len(rows), 65536):  # bounded memory: each chunk's entities' tokens at once
        r = rows[a : a + 65536]
        lengths = table.lengths[r]
        total = int(lengths.sum())
        if not total:
            continue
        owner = np.repeat(np.arange(len(r)), lengths)
        local = np.arange(total) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        flat = table.starts[r][owner] + local
        tok_start, tok_end = char_spans[flat, 0], char_spans[flat, 1]
        s, e = np.asarray(start[a : a + 65536])[owner], np.asarray(end[a : a + 65536])[owner]
        hit = (tok_end > tok_start) & (tok_end > s) & (tok_start < e)
        lo = np.full(len(r), np.iinfo(np.int64).max)
        hi = np.full(len(r), -1)
        np.minimum.at(lo, owner[hit], local[hit])
        np.maximum.at(hi, owner[hit], local[hit])
        found = hi >= 0
        first[a : a + 65536] = np.where(found, lo, NO_SPAN)
        last[a : a + 65536] = np.where(found, hi + 1, NO_SPAN)
    return Spans(rows, np.asarray(ent_idx, np.int32), first.astype(np.int32), last.astype(np.int32))
