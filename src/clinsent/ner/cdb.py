"""Build a MedCAT v2 concept database and model pack from the ontology term table.

Each live term of the disease branch becomes a concept of type T047 (Disease or Syndrome),
each term of the mental branch one of type T048 (Mental or Behavioral Dysfunction). The
concept id is the term's first UMLS CUI, or the ontology id where it has none; the label is
the preferred name and EXACT synonyms are alternative names.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from clinsent.errors import InputError

BRANCH_TYPE = {"disease": "T047", "mental": "T048"}


def concepts_from_terms(terms: pd.DataFrame, branch_types: dict[str, str] | None = None) -> pd.DataFrame:
    """Rows in MedCAT's CDB-maker CSV layout (cui, name, ontologies, name_status, type_ids, description).

    ``branch_types`` maps a term-table branch to the UMLS type id its concepts get.
    """
    types = branch_types or BRANCH_TYPE
    live = terms[terms["branch"].isin(list(types)) & ~terms["obsolete"]]
    rows = []
    for t in live.itertuples(index=False):
        cui = t.umls_cuis[0] if len(t.umls_cuis) else t.id
        type_id = types[t.branch]
        description = t.definition or ""
        rows.append(
            {
                "cui": cui,
                "name": t.label,
                "ontologies": "EFO",
                "name_status": "P",
                "type_ids": type_id,
                "description": description,
            }
        )
        for syn in t.synonyms:
            rows.append(
                {
                    "cui": cui,
                    "name": syn,
                    "ontologies": "EFO",
                    "name_status": "A",
                    "type_ids": type_id,
                    "description": "",
                }
            )
    return pd.DataFrame(rows, columns=["cui", "name", "ontologies", "name_status", "type_ids", "description"])


def build_model_pack(terms: pd.DataFrame, out_dir: str | Path, branch_types: dict[str, str] | None = None) -> Path:
    """Write a MedCAT model pack folder at ``out_dir`` (no archive, no hash in the name)."""
    from medcat.cat import CAT
    from medcat.config import Config
    from medcat.model_creation.cdb_maker import CDBMaker

    concepts = concepts_from_terms(terms, branch_types)
    if concepts.empty:
        raise InputError(
            "ontology term table",
            "no live disease or mental-disorder term to build a concept database from",
            "check `ontology.disease_root` / `ontology.mental_root` match the ontology",
        )
    config = Config()
    cdb = CDBMaker(config).prepare_csvs([concepts], full_build=True)
    cat = CAT(cdb, config=config)
    from clinsent.ner.pack import save_pack

    return save_pack(cat, out_dir)
