"""Annotate sentences with a MedCAT v2 model pack, keeping only the configured UMLS types.

The pack is loaded once per job. MedCAT v2 has no type filter in its config, so the kept
CUI set is built from the pack's type index (``cdb.type_id2info``) and set as the linking
filter. Sentences are annotated one by one with ``get_entities`` (MedCAT's multi-text API
pickles the whole model per batch and breaks under transformers>=5).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from clinsent.errors import InputError

ENTITY_COLUMNS = ["sent_id", "ent_idx", "start", "end", "cui", "type_id", "pretty_name", "source_value", "acc"]


class MedCATAnnotator:
    """Load a pack once; :meth:`annotate` returns entities with character offsets."""

    def __init__(self, pack: str | Path, type_ids: Iterable[str] = ("T047", "T048")) -> None:
        import logging

        import clinsent.ner  # noqa: F401  (disables the version check)
        from medcat.cat import CAT

        logging.getLogger("medcat").setLevel(logging.WARNING)  # it logs every document at INFO

        pack = Path(pack)
        if not pack.exists():
            raise InputError(pack, "the MedCAT model pack does not exist", "set `ner.model_pack` to a v2 pack folder or .zip")
        self.cat: Any = CAT.load_model_pack(str(pack))
        self.type_ids = list(type_ids)
        index = self.cat.cdb.type_id2info
        keep: set[str] = set()
        for t in self.type_ids:
            if t in index:
                keep |= set(index[t].cuis)
        if not keep:
            raise InputError(pack, f"the pack has no concept of the kept types {self.type_ids} "
                             f"(it has {sorted(index)[:10]})", "set `ner.type_ids` to types the pack contains")
        self.kept_cuis = keep
        self.cat.config.components.linking.filters.cuis = keep
        self._cui_type = {cui: t for t in reversed(self.type_ids) if t in index for cui in index[t].cuis}

    def annotate(self, text: str) -> list[dict[str, Any]]:
        ents = self.cat.get_entities(text)["entities"]
        out = []
        for ent in sorted(ents.values(), key=lambda e: (e["start"], e["end"])):
            if ent["cui"] not in self.kept_cuis:
                continue
            out.append({
                "start": int(ent["start"]), "end": int(ent["end"]), "cui": ent["cui"],
                "type_id": self._cui_type.get(ent["cui"], ""), "pretty_name": ent.get("pretty_name", ""),
                "source_value": ent.get("source_value", text[ent["start"]:ent["end"]]),
                "acc": float(ent.get("acc", 1.0) or 0.0),
            })
        return out

    def annotate_frame(self, sentences: pd.DataFrame) -> pd.DataFrame:
        """Entities for every row of ``sentences`` (columns sent_id, text)."""
        rows = []
        for sent_id, text in zip(sentences["sent_id"], sentences["text"], strict=True):
            for i, ent in enumerate(self.annotate(text)):
                rows.append({"sent_id": sent_id, "ent_idx": i, **ent})
        df = pd.DataFrame(rows, columns=ENTITY_COLUMNS)
        return df.astype({"sent_id": "int64", "ent_idx": "int32", "start": "int32", "end": "int32", "acc": "float32"})
