"""Whole notes as documents (the healthcare-LM paper works on documents, not sentences).

From the ingested note shards, in two streaming passes:

1. per note only its ids, category and whitespace-token count are kept (no text), and each
   patient (``subject_id``; a note without one counts as its own patient) falls into the
   ``downstream`` partition with probability ``downstream_share`` (a seeded hash, so a
   patient's notes never straddle the partitions: the paper's separate pre-training and
   downstream subsets, Appendix G); of the other notes at most ``max_documents`` are drawn
   (seeded) for ``pretrain`` (the paper's 250,000);
2. the chosen notes' text, whitespace-collapsed (the paper's pre-processing: carriage returns,
   tabs and runs of spaces removed), is written shard by shard.

Memory: a few numbers per note in pass 1 (about 40 bytes; 2 million MIMIC-III notes: 80 MB)
and one shard's notes at a time in pass 2. The statistics (:func:`length_statistics`) give
the paper's Table 12 (share of documents at or above each minimum length) and Figure 7 (the
length distribution) for the pre-training partition.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from clinsent.config.sections import Documents
from clinsent.errors import InputError
from clinsent.io.files import ParquetSink

log = logging.getLogger(__name__)

DOCUMENT_SCHEMA = pa.schema(
    [
        ("row_id", pa.int64()),
        ("subject_id", pa.int64()),
        ("hadm_id", pa.int64()),
        ("category", pa.string()),
        ("n_words", pa.int64()),
        ("text", pa.string()),
    ]
)
PARTITIONS = ("pretrain", "downstream")
MIN_LENGTHS = (16, 32, 64, 128, 256, 512, 1024, 2048)  # the paper's Table 12 rows
HIST_EDGES = (0, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192)  # Figure 7's bins (words); the last is open


def word_counts(text: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Whitespace tokens per text (DeCLUTR's ``text.split()``)."""
    return np.asarray(
        pc.list_value_length(pc.utf8_split_whitespace(text)).to_numpy(zero_copy_only=False), dtype=np.int64
    )


def unit_hash(keys: np.ndarray, seed: int, salt: int) -> np.ndarray:
    """A seeded hash of integer keys to [0, 1) (splitmix64), the same on every machine."""
    x = keys.astype(np.uint64) + np.uint64((seed * 0x9E3779B97F4A7C15 + salt) & 0xFFFFFFFFFFFFFFFF)
    with np.errstate(over="ignore"):
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        x = x ^ (x >> np.uint64(31))
    return (x >> np.uint64(11)).astype(np.float64) / float(1 << 53)


def collapse_whitespace(text: pa.Array | pa.ChunkedArray) -> pa.Array:
    return pc.utf8_trim_whitespace(pc.replace_substring_regex(text, r"\s+", " "))


def patient_keys(subject_id: np.ndarray, row_id: np.ndarray) -> np.ndarray:
    """Per note, its patient (SUBJECT_ID; -1 for none: the note is its own patient)."""
    return np.where(subject_id >= 0, subject_id, -row_id - 1).astype(np.int64)


def choose(row_id: np.ndarray, subject_id: np.ndarray, n_words: np.ndarray, s: Documents) -> dict[str, np.ndarray]:
    """Which notes each partition keeps (boolean masks over the inputs)."""
    downstream = unit_hash(patient_keys(subject_id, row_id), s.seed, 1) < s.downstream_share
    long_enough = n_words >= s.min_words
    pretrain = ~downstream & long_enough
    if s.max_documents is not None and int(pretrain.sum()) > s.max_documents:
        key = unit_hash(row_id, s.seed, 2)
        candidates = np.flatnonzero(pretrain)
        keep = candidates[np.argsort(key[candidates], kind="stable")[: s.max_documents]]
        pretrain = np.zeros_like(pretrain)
        pretrain[keep] = True
    return {"pretrain": pretrain, "downstream": downstream & long_enough}


def length_statistics(n_words: np.ndarray, categories: Sequence[str]) -> dict[str, Any]:
    """Table 12 (share of documents with at least m words, for each minimum m) and Figure 7
    (counts per length bin and quantiles) of one partition."""
    n = len(n_words)
    counts = np.histogram(n_words, bins=[*HIST_EDGES, np.iinfo(np.int64).max])[0] if n else np.zeros(len(HIST_EDGES))
    per_category = pd.Series(list(categories), dtype=object).value_counts().sort_index()
    return {
        "documents": n,
        "categories": {str(c): int(k) for c, k in per_category.items()},
        "min_length_share": {str(m): (float((n_words >= m).mean()) if n else 0.0) for m in MIN_LENGTHS},
        "min_length_count": {str(m): int((n_words >= m).sum()) for m in MIN_LENGTHS},
        "histogram": {"edges": list(HIST_EDGES), "counts": [int(c) for c in counts]},
        "quantiles": ({str(q): float(np.quantile(n_words, q)) for q in (0.05, 0.25, 0.5, 0.75, 0.95)} if n else {}),
        "mean_words": float(n_words.mean()) if n else 0.0,
    }


def build_documents(
    shards: Sequence[str | Path],
    out: dict[str, str | Path],
    s: Documents,
    log_fn: Callable[[str], Any] = log.info,
) -> dict[str, Any]:
    """Write ``out['pretrain']`` and ``out['downstream']`` (parquet, :data:`DOCUMENT_SCHEMA`)
    from the note shards; returns the statistics. Both files appear together, or neither."""
    meta: dict[str, list[np.ndarray]] = {"row_id": [], "subject_id": [], "n_words": []}
    for path in shards:
        table = pq.read_table(path, columns=["row_id", "subject_id", "text"])
        meta["row_id"].append(table["row_id"].to_numpy(zero_copy_only=False))
        meta["subject_id"].append(pc.fill_null(table["subject_id"], -1).to_numpy(zero_copy_only=False))
        meta["n_words"].append(word_counts(table["text"]))  # whitespace runs split alike, collapsed or not
    row_id, subject_id, n_words = (np.concatenate(v) if v else np.zeros(0, np.int64) for v in meta.values())
    if len(row_id) == 0:
        raise InputError(
            "the ingested notes",
            "0 notes reach the documents stage",
            "check notes.path and notes.categories (null keeps every category)",
        )
    masks = choose(row_id, subject_id, n_words, s)
    chosen = {part: row_id[m] for part, m in masks.items()}
    sinks = {part: ParquetSink(out[part], DOCUMENT_SCHEMA) for part in PARTITIONS}
    cats: dict[str, list[str]] = {part: [] for part in PARTITIONS}
    words: dict[str, list[np.ndarray]] = {part: [] for part in PARTITIONS}
    try:
        for path in shards:
            table = pq.read_table(path, columns=["row_id", "subject_id", "hadm_id", "category", "text"])
            text = collapse_whitespace(table["text"])
            table = table.set_column(table.schema.get_field_index("text"), "text", text)
            table = table.append_column("n_words", pa.array(word_counts(text)))
            ids = table["row_id"].to_numpy(zero_copy_only=False)
            for part in PARTITIONS:
                mask = np.isin(ids, chosen[part])
                part_table = table.filter(pa.array(mask))
                sinks[part].write(part_table)
                cats[part].extend(part_table["category"].to_pylist())
                words[part].append(part_table["n_words"].to_numpy(zero_copy_only=False))
        for sink in sinks.values():
            sink.close()
    except BaseException:
        for sink in sinks.values():
            sink.abort()
        for part in PARTITIONS:
            Path(out[part]).unlink(missing_ok=True)
        raise
    stats: dict[str, Any] = {
        "notes": int(len(row_id)),
        "too_short": int((n_words < s.min_words).sum()),
        "settings": {
            "max_documents": s.max_documents,
            "downstream_share": s.downstream_share,
            "seed": s.seed,
            "min_words": s.min_words,
        },
    }
    for part in PARTITIONS:
        w = np.concatenate(words[part]) if words[part] else np.zeros(0, np.int64)
        stats[part] = length_statistics(w, cats[part])
        log_fn(f"{part}: {len(w)} documents, median {np.median(w) if len(w) else 0:.0f} words")
    log_fn(f"{stats['too_short']} of {stats['notes']} notes have fewer than {s.min_words} words (dropped)")
    return stats
