"""Gather the per-shard sentences and entities into the sentence sets, one shard at a time
(or, where no method needs entities, the kept sentences alone into S_all: :func:`gather_s_all`).

For each shard: link its entities to the ontology (:func:`clinsent.corpus.sets.link_entities`),
assign its kept sentences to S_ent / S_none / the no-definition remainder
(:func:`clinsent.corpus.sets.assign_sets`) and append both to the gathered files. Only one shard and
a 64-bit hash per sentence are in memory; the hashes give the exact-duplicate (copy-paste)
counts across the whole corpus.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from clinsent.corpus.sets import assign_sets, link_entities
from clinsent.corpus.split import SENTENCE_SCHEMA
from clinsent.io.files import ParquetSink
from clinsent.ner.annotate import ENTITY_SCHEMA

SETS_SCHEMA = pa.schema(
    [
        *SENTENCE_SCHEMA,
        ("n_entities", pa.int32()),
        ("n_defined", pa.int32()),
        ("set", pa.string()),
        ("text_hash", pa.uint64()),
    ]
)
S_ALL_SCHEMA = pa.schema([*SENTENCE_SCHEMA, ("text_hash", pa.uint64())])
LINKED_SCHEMA = pa.schema(
    [
        *ENTITY_SCHEMA,
        ("term_id", pa.string()),
        ("linked_by", pa.string()),
        ("label", pa.string()),
        ("definition", pa.string()),
    ]
)


def text_hashes(texts: pd.Series) -> np.ndarray:
    """A stable 64-bit hash of each sentence text (exact-duplicate detection)."""
    return pd.util.hash_array(texts.to_numpy(dtype=object), categorize=False)


def _duplicates(hashes: list[np.ndarray]) -> dict[str, int]:
    h = np.concatenate(hashes) if hashes else np.empty(0, dtype=np.uint64)
    unique = int(np.unique(h).size)
    return {"sentences": int(h.size), "unique": unique, "exact_duplicates": int(h.size) - unique}


def gather_sets(
    sentence_paths: list[str],
    entity_paths: list[str],
    terms: pd.DataFrame,
    link_by: list[str] | tuple[str, ...],
    out_sets: str | Path,
    out_linked: str | Path,
) -> dict[str, Any]:
    """Write the gathered sets and linked entities; returns per-set and duplicate counts."""
    if len(sentence_paths) != len(entity_paths):
        raise ValueError("one entity file per sentence shard is expected")
    all_hashes: list[np.ndarray] = []
    ent_hashes: list[np.ndarray] = []
    counts: dict[str, int] = {"sentences": 0, "s_all": 0, "ent": 0, "none": 0, "nodef": 0, "entities": 0}
    linked_by: dict[str, int] = {}
    with ParquetSink(out_sets, SETS_SCHEMA) as sets_sink, ParquetSink(out_linked, LINKED_SCHEMA) as linked_sink:
        for s_path, e_path in zip(sentence_paths, entity_paths, strict=True):
            counts["sentences"] += pq.ParquetFile(s_path).metadata.num_rows
            sentences = pq.read_table(s_path, filters=[("kept", "==", True)]).to_pandas()
            linked = link_entities(pd.read_parquet(e_path), terms, link_by)
            sets = assign_sets(sentences, linked)
            sets["text_hash"] = text_hashes(sets["text"])
            sets_sink.write(sets)
            linked_sink.write(linked)
            all_hashes.append(sets["text_hash"].to_numpy())
            ent_hashes.append(sets.loc[sets["set"] == "ent", "text_hash"].to_numpy())
            counts["s_all"] += len(sets)
            counts["entities"] += len(linked)
            for name, n in sets["set"].value_counts().items():
                counts[str(name)] += int(n)
            for how, n in linked["linked_by"].value_counts().items():
                linked_by[str(how)] = linked_by.get(str(how), 0) + int(n)
    return {
        "counts": counts,
        "linked_by": linked_by,
        "exact_duplicates": {"s_all": _duplicates(all_hashes), "s_ent": _duplicates(ent_hashes)},
    }


def gather_s_all(sentence_paths: list[str], out_sets: str | Path) -> dict[str, Any]:
    """S_all without the entity stage: each shard's kept sentences in shard order, so ids, texts and
    order equal the sets :func:`gather_sets` writes; returns the sentence and exact-duplicate counts."""
    hashes: list[np.ndarray] = []
    counts = {"sentences": 0, "s_all": 0}
    with ParquetSink(out_sets, S_ALL_SCHEMA) as sink:
        for path in sentence_paths:
            counts["sentences"] += pq.ParquetFile(path).metadata.num_rows
            kept = pq.read_table(path, filters=[("kept", "==", True)]).to_pandas().reset_index(drop=True)
            kept["text_hash"] = text_hashes(kept["text"])
            sink.write(kept)
            hashes.append(kept["text_hash"].to_numpy())
            counts["s_all"] += len(kept)
    return {"counts": counts, "exact_duplicates": {"s_all": _duplicates(hashes)}}
