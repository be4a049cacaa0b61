"""Annotate sentences with a MedCAT v2 model pack, keeping only the configured UMLS types.

The pack is loaded once per job. MedCAT v2 has no type filter in its config, so the kept
CUI set is built from the pack's type index (``cdb.type_id2info``) and set as the linking
filter. Sentences are annotated one by one with ``get_entities`` (MedCAT's multi-text API
pickles the whole model per batch and breaks under transformers>=5).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from clinsent.io.files import ParquetSink
from clinsent.ner.pack import kept_cuis, load_pack

ENTITY_SCHEMA = pa.schema(
    [
        ("sent_id", pa.int64()),
        ("ent_idx", pa.int32()),
        ("start", pa.int32()),
        ("end", pa.int32()),
        ("cui", pa.string()),
        ("type_id", pa.string()),
        ("pretty_name", pa.string()),
        ("source_value", pa.string()),
        ("acc", pa.float32()),
    ]
)
ENTITY_COLUMNS = ENTITY_SCHEMA.names


class MedCATAnnotator:
    """Load a pack once; :meth:`annotate` returns entities with character offsets."""

    def __init__(self, pack: str | Path, type_ids: Iterable[str] = ("T047", "T048")) -> None:
        self.cat: Any = load_pack(pack)
        self.type_ids = list(type_ids)
        index = self.cat.cdb.type_id2info
        self.kept_cuis = kept_cuis(self.cat.cdb, self.type_ids, pack)
        self.cat.config.components.linking.filters.cuis = self.kept_cuis
        self._cui_type = {cui: t for t in reversed(self.type_ids) if t in index for cui in index[t].cuis}

    def annotate(self, text: str) -> list[dict[str, Any]]:
        ents = self.cat.get_entities(text)["entities"]
        out = []
        for ent in sorted(ents.values(), key=lambda e: (e["start"], e["end"])):
            if ent["cui"] not in self.kept_cuis:
                continue
            out.append(
                {
                    "start": int(ent["start"]),
                    "end": int(ent["end"]),
                    "cui": ent["cui"],
                    "type_id": self._cui_type.get(ent["cui"], ""),
                    "pretty_name": ent.get("pretty_name", ""),
                    "source_value": ent.get("source_value", text[ent["start"] : ent["end"]]),
                    "acc": float(ent.get("acc", 1.0) or 0.0),
                }
            )
        return out

    def annotate_frame(self, sentences: pd.DataFrame) -> pd.DataFrame:
        """Entities for every row of ``sentences`` (columns sent_id, text)."""
        rows = []
        for sent_id, text in zip(sentences["sent_id"], sentences["text"], strict=True):
            for i, ent in enumerate(self.annotate(text)):
                rows.append({"sent_id": sent_id, "ent_idx": i, **ent})
        df = pd.DataFrame(rows, columns=ENTITY_COLUMNS)
        return df.astype({"sent_id": "int64", "ent_idx": "int32", "start": "int32", "end": "int32", "acc": "float32"})


def annotate_shard(
    sentences_path: str | Path,
    out_path: str | Path,
    annotator: MedCATAnnotator,
    rows_per_batch: int = 8192,
    log: Callable[[str], Any] | None = None,
    every: float = 30.0,
) -> dict[str, int]:
    """Entities of the kept sentences of one shard, streaming ``rows_per_batch`` sentences at a
    time; with ``log``, a progress line (rows done, sentences/s, ETA) at most every ``every`` seconds."""
    from clinsent.process.eta import Progress

    counts = {"sentences": 0, "entities": 0, "sentences_with_entities": 0}
    source = pq.ParquetFile(sentences_path)
    progress = Progress(
        f"ner {Path(sentences_path).name}",
        source.metadata.num_rows,
        log or (lambda _: None),
        unit="sentence rows",
        every=every,
        rate_of="sentences",
    )
    done = 0
    with ParquetSink(out_path, ENTITY_SCHEMA) as sink:
        for batch in source.iter_batches(batch_size=rows_per_batch, columns=["sent_id", "text", "kept"]):
            kept = batch.filter(batch.column("kept"))
            df = annotator.annotate_frame(kept.to_pandas())
            sink.write(df)
            done += batch.num_rows
            counts["sentences"] += kept.num_rows
            counts["entities"] += len(df)
            counts["sentences_with_entities"] += int(df["sent_id"].nunique())
            progress.update(done, sentences=counts["sentences"], entities=counts["entities"])
    progress.update(done, final=True, sentences=counts["sentences"], entities=counts["entities"])
    return counts
