"""The corpus manifest: what was run on what, and how many rows each stage produced.

It records per-stage counts (notes read and skipped, sentences, kept sentences, entities,
sets, exact duplicates), the tool versions of the splitter and the NER, the normalisation
version, the ontology's version and sha256, the MedCAT pack's hash and the shard count, so
a corpus can be compared with another run or rebuilt exactly. Where no method needs entities,
the entity stage did not run: ``entities``, ``ontology`` and ``ner`` are null.
"""

from __future__ import annotations

import json
import platform
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow.parquet as pq

from clinsent.corpus.normalize import NORM_VERSION
from clinsent.ner.pack import pack_hash
from clinsent.safety.content import sha256_file


@dataclass(frozen=True)
class EntityStage:
    """The entity stage's files (where it ran): entity shards, the term table and its coverage, the
    ontology file and the MedCAT pack, with the kept type ids."""

    entity_paths: list[str]
    terms_path: str
    coverage_csv: str
    ontology_path: str
    pack: str
    type_ids: list[str]


TOOLS = ("clinsent", "spacy", "scispacy", "pysbd", "medcat", "pyarrow", "pandas", "numpy")


def tool_versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for name in TOOLS:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def _rows(paths: list[str]) -> list[int]:
    return [pq.ParquetFile(p).metadata.num_rows for p in paths]


def build_manifest(
    ingest_json: str,
    sentence_paths: list[str],
    counts_json: str,
    shards: int,
    notes_cfg: dict[str, Any],
    entity_stage: EntityStage | None = None,
) -> dict[str, Any]:
    """The manifest; ``entity_stage`` is None where no method needs entities (no ontology, pack or NER ran)."""
    ingest = json.loads(Path(ingest_json).read_text())
    sets = json.loads(Path(counts_json).read_text())
    sentences = _rows(sentence_paths)
    out: dict[str, Any] = {
        "normalisation_version": NORM_VERSION,
        "shards": shards,
        "notes": {
            "path": notes_cfg["path"],
            "format": notes_cfg["format"],
            "categories": notes_cfg.get("categories"),
            **{k: v for k, v in ingest.items() if k not in ("source", "format")},
        },
        "sentences": {"total": sum(sentences), "kept": sets["counts"]["s_all"], "per_shard": sentences},
        "sets": sets["counts"],
        "exact_duplicates": sets["exact_duplicates"],
        "tools": tool_versions(),
    }
    if entity_stage is None:
        return {**out, "entities": None, "ontology": None, "ner": None}
    e = entity_stage
    entities = _rows(e.entity_paths)
    terms = pd.read_parquet(e.terms_path, columns=["ontology_version"])
    version = str(terms["ontology_version"].iloc[0]) if len(terms) else "unknown"
    return {
        **out,
        "entities": {"total": sum(entities), "per_shard": entities, "linked_by": sets["linked_by"]},
        "ontology": {
            "path": e.ontology_path,
            "version": version,
            "sha256": sha256_file(e.ontology_path),
            "coverage": pd.read_csv(e.coverage_csv).to_dict(orient="records"),
        },
        "ner": {"pack": e.pack, "pack_sha256": pack_hash(e.pack), "type_ids": list(e.type_ids)},
    }
