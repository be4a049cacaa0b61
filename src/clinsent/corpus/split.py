"""Sentence splitting with ScispaCy (its rule tokenizer and pysbd sentencizer).

The note is normalised first (:mod:`clinsent.corpus.normalize`). Every remaining line is a
unit of its own (a paragraph after unwrapping, a header, a list item), and pysbd is fed one
unit at a time: it slows down superlinearly on long inputs and must never join a header to
the text below it. Segments that pysbd cuts off after clinical abbreviations (``p.o.``,
``b.i.d.``, ``Dr.``) are merged back. Offsets index the normalised note.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from clinsent.corpus.normalize import NORM_VERSION, normalize_note
from clinsent.io.files import ParquetSink

#: Abbreviations that never end a sentence: the next segment always continues it.
_NEVER_FINAL = re.compile(r"(?:\b(?:dr|mr|mrs|ms|st|vs|approx|e\.g|i\.e|p\.o|i\.v|no|sig|pt)\.)$", re.I)
#: A segment made only of dosing abbreviations and the like ("p.o.", "q.d.", "q.4-6h.").
_FRAGMENT = re.compile(r"^(?:(?:[a-z]{1,3}\.){1,4}(?:\d+(?:-\d+)?h\.)?\s*)+$", re.I)


@dataclass(frozen=True)
class Sentence:
    start: int
    end: int
    text: str

    @property
    def n_words(self) -> int:
        return len(self.text.split())


def build_nlp() -> Any:
    """spaCy blank English with scispacy's rule tokenizer and pysbd sentencizer."""
    import spacy
    from scispacy.custom_sentence_segmenter import pysbd_sentencizer  # noqa: F401  (registers the component)
    from scispacy.custom_tokenizer import combined_rule_tokenizer

    nlp = spacy.blank("en")
    nlp.tokenizer = combined_rule_tokenizer(nlp)
    nlp.add_pipe("pysbd_sentencizer")
    return nlp


def _should_merge(prev: str, seg: str) -> bool:
    first = seg[:1]
    return bool(first.islower() or first in ",;:)]%" or _FRAGMENT.match(seg) or _NEVER_FINAL.search(prev))


def merge_fragments(spans: list[tuple[int, int]], text: str) -> list[tuple[int, int]]:
    """Merge a span into the one before it where the cut was an abbreviation, not a sentence end."""
    merged: list[tuple[int, int]] = []
    for start, end in spans:
        if merged and _should_merge(text[merged[-1][0] : merged[-1][1]], text[start:end]):
            merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    return merged


#: pysbd's cost grows faster than linearly with input length; a line longer than this (a
#: lab dump or a note without line breaks) is cut at a sentence-like boundary before it. At
#: 10,000 characters a 10 MB line took 122 s here (demo text), at 2,000 51 s: a piece's sentences
#: are cut where it ends (at a sentence end in its second half where there is one), so a line
#: this long gains a few sentences (+8% on that text); lines of real notes are far shorter.
MAX_UNIT_CHARS = 2_000
_CUT = re.compile(r"[.!?]\s+(?=[A-Z0-9])")


def _pieces(start: int, end: int, text: str, limit: int) -> Iterator[tuple[int, int]]:
    """Cut ``text[start:end]`` into pieces of at most ``limit`` chars, at a sentence end or space."""
    while end - start > limit:
        window = text[start : start + limit]
        cuts = [m.end() for m in _CUT.finditer(window)]
        cut = cuts[-1] if cuts and cuts[-1] > limit // 2 else window.rfind(" ") + 1
        if cut <= 0:
            cut = limit
        yield start, start + len(window[:cut].rstrip())
        start += cut
        while start < end and text[start].isspace():
            start += 1
    if end > start:
        yield start, end


def _units(text: str, limit: int = MAX_UNIT_CHARS) -> Iterator[tuple[int, int]]:
    """(start, end) of each non-blank line, whitespace trimmed, long lines cut to ``limit``."""
    pos = 0
    for line in text.split("\n"):
        stripped = line.strip()
        if stripped:
            lead = len(line) - len(line.lstrip())
            yield from _pieces(pos + lead, pos + lead + len(stripped), text, limit)
        pos += len(line) + 1


class SentenceSplitter:
    """Build once per job; call :meth:`split` per note."""

    norm_version = NORM_VERSION

    def __init__(self, nlp: Any | None = None, max_unit_chars: int = MAX_UNIT_CHARS) -> None:
        self.nlp = nlp if nlp is not None else build_nlp()
        self.max_unit_chars = max_unit_chars

    def split_normalized(self, text: str, tick: Callable[[int, int], Any] | None = None) -> list[Sentence]:
        """The sentences of a normalised note; ``tick(done, total)``: characters split so far, after
        each unit (a long note's progress)."""
        out: list[Sentence] = []
        for u_start, u_end in _units(text, self.max_unit_chars):
            if tick is not None:
                tick(u_start, len(text))
            unit = text[u_start:u_end]
            doc = self.nlp(unit)
            spans = []
            for sent in doc.sents:
                s = sent.text.strip()
                if not s:
                    continue
                lead = len(sent.text) - len(sent.text.lstrip())
                a = u_start + sent.start_char + lead
                spans.append((a, a + len(s)))
            out.extend(Sentence(a, b, text[a:b]) for a, b in merge_fragments(spans, text))
        return out

    def split(self, raw_note: str, tick: Callable[[int, int], Any] | None = None) -> tuple[str, list[Sentence]]:
        """Normalise and split one note; returns the normalised text and its sentences."""
        norm = normalize_note(raw_note)
        return norm, self.split_normalized(norm, tick)


SENTENCE_SCHEMA = pa.schema(
    [
        ("sent_id", pa.int64()),
        ("row_id", pa.int64()),
        ("sent_idx", pa.int32()),
        ("start", pa.int32()),
        ("end", pa.int32()),
        ("text", pa.string()),
        ("n_words", pa.int32()),
        ("kept", pa.bool_()),
        ("norm_version", pa.string()),
    ]
)
SENTENCE_COLUMNS = SENTENCE_SCHEMA.names
#: sent_id = row_id * SENT_ID_BASE + sent_idx (a note has fewer than a million sentences).
SENT_ID_BASE = 1_000_000


def split_notes(
    notes: pd.DataFrame,
    splitter: SentenceSplitter,
    min_words: int,
    tick: Callable[[int, int, int], Any] | None = None,
) -> pd.DataFrame:
    """Sentences of every note (pandas DataFrame with ``SENTENCE_COLUMNS``).

    Every sentence is kept in the table (the total is the 100% row of the MED-SE Table 2);
    ``kept`` marks those with at least ``min_words`` whitespace-separated words. ``tick(row_id,
    done, total)``: a note's characters split so far, as it goes.
    """
    rows = []
    for row_id, text in zip(notes["row_id"], notes["text"], strict=True):
        within = (lambda done, total, r=int(row_id): tick(r, done, total)) if tick is not None else None
        _, sents = splitter.split(text, within)
        for idx, s in enumerate(sents):
            rows.append(
                (
                    int(row_id) * SENT_ID_BASE + idx,
                    int(row_id),
                    idx,
                    s.start,
                    s.end,
                    s.text,
                    s.n_words,
                    s.n_words >= min_words,
                    splitter.norm_version,
                )
            )
    df = pd.DataFrame(rows, columns=SENTENCE_COLUMNS)
    return df.astype(
        {
            "sent_id": "int64",
            "row_id": "int64",
            "sent_idx": "int32",
            "start": "int32",
            "end": "int32",
            "n_words": "int32",
            "kept": "bool",
        }
    )


def split_shard(
    notes_path: str | Path,
    out_path: str | Path,
    splitter: SentenceSplitter,
    min_words: int,
    notes_per_batch: int = 256,
    log: Callable[[str], Any] | None = None,
    every: float = 15.0,
) -> dict[str, int]:
    """Split one shard of notes, streaming: ``notes_per_batch`` notes in memory at a time; with
    ``log``, a progress line (notes done, sentences/s, ETA) at most every ``every`` seconds, and,
    inside a note that takes longer, one every ``every`` seconds (at least 5; its row id and
    characters done: counts only, never its text)."""
    from clinsent.process.eta import Progress

    counts = {"notes": 0, "sentences": 0, "kept": 0}
    notes = pq.ParquetFile(notes_path)
    progress = Progress(
        f"split {Path(notes_path).name}",
        notes.metadata.num_rows,
        log or (lambda _: None),
        every=every,
        rate_of="sentences",
    )
    said = [time.monotonic()]

    def within(row_id: int, done: int, total: int) -> None:  # a note long enough to take a while
        if log is not None and time.monotonic() - said[0] >= max(every, 5.0):
            log(f"split {Path(notes_path).name}: note {row_id}: {done:,} of {total:,} characters split")
            said[0] = time.monotonic()

    with ParquetSink(out_path, SENTENCE_SCHEMA) as sink:
        for batch in notes.iter_batches(batch_size=notes_per_batch, columns=["row_id", "text"]):
            df = split_notes(batch.to_pandas(), splitter, min_words, within)
            said[0] = time.monotonic()
            sink.write(df)
            counts["notes"] += batch.num_rows
            counts["sentences"] += len(df)
            counts["kept"] += int(df["kept"].sum())
            progress.update(counts["notes"], sentences=counts["sentences"])
    progress.update(counts["notes"], final=True, sentences=counts["sentences"])
    return counts
