"""Link entities to ontology definitions and form the sentence sets of MED-SE (section 3.2).

Linking order for each entity: by UMLS CUI, then by ontology id (for concepts whose id is
the ontology id), then by exact normalised name against labels and EXACT synonyms. Live
terms win over obsolete ones and terms with a definition over those without.

Sets over the sentences kept by the length filter (S_all):
- S_ent: at least one entity with a definition;
- S_none: no entity at all;
- the remainder ("nodef"): entities, none of them with a definition.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

_SPACES = re.compile(r"\s+")


def normalise_name(name: str) -> str:
    return _SPACES.sub(" ", name.lower().replace("'s ", " ").replace("-", " ")).strip()


def _rank(terms: pd.DataFrame) -> pd.DataFrame:
    # live before obsolete, defined before undefined, disease branches before others, then id
    return terms.assign(
        _r=terms["obsolete"].astype(int) * 4
        + terms["definition"].isna().astype(int) * 2
        + (~terms["branch"].isin(["disease", "mental"])).astype(int)
    ).sort_values(["_r", "id"], kind="stable")


def build_lookups(terms: pd.DataFrame) -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
    """(cui -> term id, term id -> term id, normalised name -> term id), best term first."""
    ranked = _rank(terms)
    by_cui: dict[str, str] = {}
    by_name: dict[str, str] = {}
    for t in ranked.itertuples(index=False):
        for cui in t.umls_cuis:
            by_cui.setdefault(cui, t.id)
        if not t.obsolete:
            for name in [t.label, *t.synonyms]:
                by_name.setdefault(normalise_name(name), t.id)
    by_id = {i: i for i in terms["id"]}
    return by_cui, by_id, by_name


LINK_BY = ("cui", "ontology_id", "name")


def link_entities(
    entities: pd.DataFrame, terms: pd.DataFrame, link_by: tuple[str, ...] | list[str] = LINK_BY
) -> pd.DataFrame:
    """Entities with ``term_id``, ``linked_by``, ``label`` and ``definition`` (null when not linked).

    ``link_by`` lists the linking steps to use, in order (a subset of ``LINK_BY``).
    """
    unknown = [b for b in link_by if b not in LINK_BY]
    if unknown:
        raise ValueError(f"unknown linking step(s) {unknown}; use {', '.join(LINK_BY)}")
    by_cui, by_id, by_name = build_lookups(terms)
    term_ids: list[str | None] = []
    how: list[str] = []
    for cui, src, pretty in zip(entities["cui"], entities["source_value"], entities["pretty_name"], strict=True):
        found: tuple[str, str] | None = None
        for step in link_by:
            if step == "cui" and cui in by_cui:
                found = (by_cui[cui], step)
            elif step == "ontology_id" and cui in by_id:
                found = (by_id[cui], step)
            elif step == "name":
                hit = by_name.get(normalise_name(src)) or by_name.get(normalise_name(pretty))
                found = (hit, step) if hit else None
            if found:
                break
        term_ids.append(found[0] if found else None)
        how.append(found[1] if found else "none")
    info = terms.set_index("id")[["label", "definition"]]
    out = entities.copy()
    out["term_id"] = term_ids
    out["linked_by"] = how
    out["label"] = [info.at[t, "label"] if t is not None else None for t in term_ids]
    out["definition"] = [info.at[t, "definition"] if t is not None else None for t in term_ids]
    return out


def assign_sets(sentences: pd.DataFrame, linked: pd.DataFrame) -> pd.DataFrame:
    """Kept sentences (S_all) with ``n_entities``, ``n_defined`` and ``set`` in {ent, none, nodef}."""
    s_all = sentences[sentences["kept"]].copy()
    n_ent = linked.groupby("sent_id").size()
    n_def = linked[linked["definition"].notna()].groupby("sent_id").size()
    s_all["n_entities"] = s_all["sent_id"].map(n_ent).fillna(0).astype("int32")
    s_all["n_defined"] = s_all["sent_id"].map(n_def).fillna(0).astype("int32")
    s_all["set"] = np.where(s_all["n_defined"] > 0, "ent", np.where(s_all["n_entities"] == 0, "none", "nodef"))
    return s_all.reset_index(drop=True)


def table2(counts: dict[str, int]) -> pd.DataFrame:
    """MED-SE Table 2: sentence counts per set, with shares of all split sentences.

    ``counts`` has ``sentences`` (every split sentence), ``s_all`` (kept by the length
    filter) and ``ent``, ``none``, ``nodef`` (each set's sentences; the workflow sums them per shard).
    """
    total = counts["sentences"]
    rows = [
        ("S_all", counts["s_all"]),
        ("S_ent", counts["ent"]),
        ("S_none", counts["none"]),
        ("S_nodef (entities, none defined)", counts["nodef"]),
        ("Discharge summaries (all sentences)", total),
    ]
    return pd.DataFrame(
        {
            "set": [r[0] for r in rows],
            "sentences": [r[1] for r in rows],
            "percent": [round(100.0 * r[1] / total, 2) if total else 0.0 for r in rows],
        }
    )


def exact_duplicates_table(dups: dict[str, dict[str, int]]) -> pd.DataFrame:
    """Exact-duplicate (copy-paste) sentence counts per set: sentences, unique texts, duplicates, share."""
    rows = []
    for name, label in (("s_all", "S_all"), ("s_ent", "S_ent")):
        d = dups[name]
        share = round(100.0 * d["exact_duplicates"] / d["sentences"], 2) if d["sentences"] else 0.0
        rows.append(
            {
                "set": label,
                "sentences": d["sentences"],
                "unique_texts": d["unique"],
                "exact_duplicates": d["exact_duplicates"],
                "duplicate_percent": share,
            }
        )
    return pd.DataFrame(rows)


def table1(sets: pd.DataFrame, linked: pd.DataFrame, top_fraction: float = 0.1) -> pd.DataFrame:
    """MED-SE Table 1: entity statistics over the defined entities of S_ent.

    An entity is an ontology term; the top entities are the most frequent ``top_fraction``
    of the unique entities (at least one; the paper's 10%), and the per-sentence count is
    over S_ent sentences.
    """
    ent_sents = sets[sets["set"] == "ent"]
    defined = linked[linked["definition"].notna() & linked["sent_id"].isin(ent_sents["sent_id"])]
    freq = defined["term_id"].value_counts()
    n_top = max(1, int(np.ceil(top_fraction * len(freq)))) if len(freq) else 0
    per_sent = ent_sents["n_defined"].to_numpy(dtype=float)
    rows = [
        ("# of unique entities", str(len(freq))),
        (
            f"# of occurrences of the top {top_fraction:.0%} entities",
            str(int(freq.iloc[:n_top].sum())) if n_top else "0",
        ),
        (
            f"share of occurrences of the top {top_fraction:.0%} entities (%)",
            f"{100.0 * freq.iloc[:n_top].sum() / max(1, freq.sum()):.2f}" if n_top else "0.00",
        ),
        ("total # of entities", str(int(freq.sum()))),
        (
            "per-sentence # of entities (mean ± std)",
            f"{per_sent.mean():.2f} ± {per_sent.std(ddof=0):.2f}" if len(per_sent) else "0.00 ± 0.00",
        ),
    ]
    return pd.DataFrame(rows, columns=["statistic", "value"])
