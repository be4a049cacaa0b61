"""MedCAT NER offsets and type filtering, definition linking, sentence sets and Tables 1-2."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from clinsent.corpus.sets import assign_sets, link_entities, table1, table2
from clinsent.errors import InputError
from clinsent.ner.annotate import MedCATAnnotator
from clinsent.ner.cdb import build_model_pack, concepts_from_terms


def _terms() -> pd.DataFrame:
    rows = [
        (
            "EFO:1",
            "congestive heart failure",
            ["CHF", "heart failure"],
            "The heart pumps too little.",
            ["C0018802"],
            "disease",
            False,
        ),
        ("EFO:2", "major depressive disorder", ["MDD"], "Persistent low mood.", ["C1269683"], "mental", False),
        ("EFO:3", "hypertension", ["HTN"], None, ["C0020538"], "disease", False),
        ("EFO:4", "cardiovascular disease", [], "Disease of heart or vessels.", [], "disease", False),
        ("EFO:5", "old heart failure", [], "Obsolete text.", ["C0018802"], "disease", True),
        ("EFO:6", "blood pressure", [], "A measurement.", ["C0005823"], "other", False),
    ]
    return pd.DataFrame(rows, columns=["id", "label", "synonyms", "definition", "umls_cuis", "branch", "obsolete"])


@pytest.fixture(scope="module")
def pack(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_model_pack(_terms(), tmp_path_factory.mktemp("medcat") / "pack")


def test_concepts_types_and_names() -> None:
    c = concepts_from_terms(_terms())
    assert set(c["cui"]) == {"C0018802", "C1269683", "C0020538", "EFO:4"}  # obsolete and 'other' left out
    assert set(c.loc[c["cui"] == "C1269683", "type_ids"]) == {"T048"}
    assert set(c.loc[c["cui"] == "C0018802", "name"]) == {"congestive heart failure", "CHF", "heart failure"}


def test_ner_offsets_and_types(pack: Path) -> None:
    ann = MedCATAnnotator(pack, ["T047", "T048"])
    text = "History of CHF and HTN, now with MDD and congestive heart failure; blood pressure stable."
    ents = ann.annotate(text)
    found = [(text[e["start"] : e["end"]], e["cui"], e["type_id"]) for e in ents]
    assert ("CHF", "C0018802", "T047") in found
    assert ("HTN", "C0020538", "T047") in found
    assert ("MDD", "C1269683", "T048") in found
    assert ("congestive heart failure", "C0018802", "T047") in found
    assert all(text[e["start"] : e["end"]] == e["source_value"] for e in ents)
    assert not any(e["cui"] == "C0005823" for e in ents)


def test_ner_keeps_only_configured_types(pack: Path) -> None:
    ann = MedCATAnnotator(pack, ["T048"])
    ents = ann.annotate("History of CHF, now with MDD.")
    assert [e["cui"] for e in ents] == ["C1269683"]


def test_pack_without_kept_types_is_an_error(pack: Path) -> None:
    with pytest.raises(InputError, match="T999"):
        MedCATAnnotator(pack, ["T999"])


def _entities() -> pd.DataFrame:
    rows = [
        (10, 0, 0, 3, "C0018802", "T047", "congestive heart failure", "CHF"),  # by CUI, live term wins over obsolete
        (10, 1, 8, 11, "C0020538", "T047", "hypertension", "HTN"),  # linked but no definition
        (11, 0, 0, 3, "C0020538", "T047", "hypertension", "HTN"),
        (12, 0, 0, 22, "EFO:4", "T047", "cardiovascular disease", "cardiovascular disease"),  # by ontology id
        (13, 0, 0, 13, "C9999999", "T048", "Major depressive disorder", "major depressive-disorder"),  # by name
        (13, 1, 20, 25, "C8888888", "T047", "zzz", "zzz"),  # not linked
    ]
    return pd.DataFrame(
        rows, columns=["sent_id", "ent_idx", "start", "end", "cui", "type_id", "pretty_name", "source_value"]
    )


def test_linking_order() -> None:
    linked = link_entities(_entities(), _terms())
    assert linked["term_id"].tolist() == ["EFO:1", "EFO:3", "EFO:3", "EFO:4", "EFO:2", None]
    assert linked["linked_by"].tolist() == ["cui", "cui", "cui", "ontology_id", "name", "none"]
    assert linked["definition"].notna().tolist() == [True, False, False, True, True, False]
    no_names = link_entities(_entities(), _terms(), ["cui", "ontology_id"])
    assert no_names["term_id"].tolist() == ["EFO:1", "EFO:3", "EFO:3", "EFO:4", None, None]
    names_first = link_entities(_entities(), _terms(), ["name", "cui"])
    assert names_first["linked_by"].tolist() == ["name"] * 5 + ["none"]
    assert names_first["term_id"].tolist() == linked["term_id"].tolist()


def test_sets_and_tables() -> None:
    sentences = pd.DataFrame(
        {"sent_id": [10, 11, 12, 13, 14, 15], "kept": [True, True, True, True, True, False], "text": list("abcdef")}
    )
    linked = link_entities(_entities(), _terms())
    sets = assign_sets(sentences, linked).set_index("sent_id")
    assert sets["set"].to_dict() == {10: "ent", 11: "nodef", 12: "ent", 13: "ent", 14: "none"}
    assert sets.loc[10, "n_entities"] == 2 and sets.loc[10, "n_defined"] == 1
    s = sets.reset_index()
    counts = {
        "sentences": len(sentences),
        "s_all": len(s),
        **{n: int((s["set"] == n).sum()) for n in ("ent", "none", "nodef")},
    }
    t2 = table2(counts).set_index("set")
    assert t2.loc["S_all", "sentences"] == 5 and t2.loc["S_ent", "sentences"] == 3
    assert t2.loc["S_none", "sentences"] == 1 and t2.loc["Discharge summaries (all sentences)", "sentences"] == 6
    assert t2.loc["S_ent", "percent"] == 50.0
    t1 = table1(sets.reset_index(), linked).set_index("statistic")["value"]
    assert t1["# of unique entities"] == "3"
    assert t1["total # of entities"] == "3"
    assert t1["per-sentence # of entities (mean ± std)"] == "1.00 ± 0.00"


def test_v1_pack_is_refused_with_the_converter(tmp_path: Path) -> None:
    from clinsent.ner.pack import load_pack

    old = tmp_path / "old_pack"
    old.mkdir()
    (old / "cdb.dat").write_bytes(b"\x80\x04")
    with pytest.raises(InputError, match=r"v1 pack.*legacy_converter"):
        load_pack(old)


def test_missing_spacy_model_fails_instead_of_downloading(tmp_path: Path) -> None:
    from medcat.tokenizing.spacy_impl import tokenizers

    from clinsent.ner.pack import _offline_spacy_guard

    _offline_spacy_guard(tmp_path / "pack")
    with pytest.raises(InputError, match="not installed"):
        tokenizers.ensure_spacy_model("en_core_clinsent_absent_md")


def test_slim_pack_keeps_only_what_the_kept_types_need(pack: Path, tmp_path: Path) -> None:
    from clinsent.ner.pack import load_pack, pack_hash, slim_pack

    stats = slim_pack(pack, ["T048"], tmp_path / "slim")
    assert stats["concepts_after"] < stats["concepts_before"]
    slim = load_pack(tmp_path / "slim")
    assert set(slim.cdb.cui2info) >= set(slim.cdb.type_id2info["T048"].cuis)
    assert not set(slim.cdb.cui2info) & {"C0018802", "C0020538", "EFO:4"}  # T047 concepts, no shared names
    ann = MedCATAnnotator(tmp_path / "slim", ["T048"])
    assert {e["type_id"] for e in ann.annotate("History of major depressive disorder and heart failure.")} == {"T048"}
    assert pack_hash(pack) == pack_hash(pack) and pack_hash(pack) != pack_hash(tmp_path / "slim")


def test_gather_over_shards_equals_the_whole(tmp_path: Path) -> None:
    from clinsent.corpus.gather import gather_sets
    from clinsent.corpus.split import SENTENCE_SCHEMA
    from clinsent.ner.annotate import ENTITY_SCHEMA

    sentences = pd.DataFrame(
        {
            "sent_id": [10, 11, 12, 13, 14, 15],
            "row_id": [1, 1, 2, 2, 3, 3],
            "sent_idx": [0, 1, 0, 1, 0, 1],
            "start": 0,
            "end": 1,
            "text": ["x", "y", "x", "z", "x", "w"],
            "n_words": 10,
            "kept": [True, True, True, True, True, False],
            "norm_version": "v",
        }
    )
    entities = _entities().assign(acc=1.0)
    paths_s, paths_e = [], []
    for i, ids in enumerate(([10, 11, 12], [13, 14, 15])):
        s = sentences[sentences["sent_id"].isin(ids)]
        e = entities[entities["sent_id"].isin(ids)]
        s.to_parquet(tmp_path / f"s{i}.parquet", schema=SENTENCE_SCHEMA, index=False)
        e.to_parquet(tmp_path / f"e{i}.parquet", schema=ENTITY_SCHEMA, index=False)
        paths_s.append(str(tmp_path / f"s{i}.parquet"))
        paths_e.append(str(tmp_path / f"e{i}.parquet"))
    out = gather_sets(
        paths_s,
        paths_e,
        _terms(),
        ["cui", "ontology_id", "name"],
        tmp_path / "sets.parquet",
        tmp_path / "linked.parquet",
    )
    whole = assign_sets(sentences, link_entities(entities, _terms()))
    got = pd.read_parquet(tmp_path / "sets.parquet")
    assert got["sent_id"].tolist() == whole["sent_id"].tolist() and got["set"].tolist() == whole["set"].tolist()
    assert out["counts"] == {"sentences": 6, "s_all": 5, "ent": 3, "none": 1, "nodef": 1, "entities": len(entities)}
    # "x" is kept three times: two exact copies (copy-paste) in S_all
    assert out["exact_duplicates"]["s_all"] == {"sentences": 5, "unique": 3, "exact_duplicates": 2}
    # without the entity stage: the same sentences, ids, texts and order, and the same duplicate counts
    from clinsent.corpus.gather import gather_s_all

    alone = gather_s_all(paths_s, tmp_path / "s_all.parquet")
    s_all = pd.read_parquet(tmp_path / "s_all.parquet")
    assert s_all.drop(columns="text_hash").equals(got[list(SENTENCE_SCHEMA.names)])
    assert s_all["text_hash"].tolist() == got["text_hash"].tolist()
    assert alone == {
        "counts": {"sentences": 6, "s_all": 5},
        "exact_duplicates": {"s_all": out["exact_duplicates"]["s_all"]},
    }
