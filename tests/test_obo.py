"""The lenient OBO reader and the term table."""

from __future__ import annotations

from pathlib import Path

import pytest

from clinsent.errors import InputError
from clinsent.ontology.obo import build_term_table, iter_obo_terms

OBO = r"""format-version: 1.2
data-version: releases/v3.92.0

[Term]
id: EFO:0000408
name: disease

[Term]
id: EFO:0000677
name: mental or behavioural disorder
is_a: EFO:0000408 ! disease

[Term]
id: EFO:1
name: heart failure
def: "The heart \"fails\" to pump enough." [PMID:1]
synonym: "CHF" EXACT []
synonym: "cardiac thing" RELATED []
xref: UMLS:C0018802 {source="MONDO:equivalentTo"}
xref: KEGG COMPOUND:C00031
is_a: EFO:0000408 {source="x"} ! disease

[Term]
id: EFO:2
name: depression
def: "Low mood." []
xref: UMLS_CUI:C1269683
xref: http://linkedlifedata.com/resource/umls/id/C0011570
is_a: EFO:0000677

[Term]
id: EFO:3
name: blood pressure
def: "A measurement." []
xref: UMLS:C0005823

[Term]
id: EFO:4
name: obsolete heart failure
def: "Old." []
xref: UMLS:C0018802
is_obsolete: true

[Typedef]
id: part_of
name: part of
xref: BFO:0000050
"""


def test_stanza_fields() -> None:
    terms = {t.id: t for t in iter_obo_terms(OBO.splitlines(True))}
    assert set(terms) == {"EFO:0000408", "EFO:0000677", "EFO:1", "EFO:2", "EFO:3", "EFO:4"}
    hf = terms["EFO:1"]
    assert hf.definition == 'The heart "fails" to pump enough.'
    assert hf.synonyms == ["CHF"]
    assert hf.umls_cuis == ["C0018802"]
    assert hf.parents == ["EFO:0000408"]
    assert terms["EFO:2"].umls_cuis == ["C1269683", "C0011570"]
    assert terms["EFO:4"].obsolete and not hf.obsolete


def test_term_table_branches(tmp_path: Path) -> None:
    path = tmp_path / "efo.obo"
    path.write_text(OBO)
    df = build_term_table(path).set_index("id")
    assert df.loc["EFO:1", "branch"] == "disease"
    assert df.loc["EFO:2", "branch"] == "mental"
    assert df.loc["EFO:0000677", "branch"] == "disease"
    assert df.loc["EFO:3", "branch"] == "other"
    assert df.loc["EFO:0000408", "branch"] == "other"
    assert (df["ontology_version"] == "releases/v3.92.0").all()


def test_demo_ontology_shape() -> None:
    from conftest import DEMO

    df = build_term_table(DEMO / "efo.demo.obo")
    live = df[~df["obsolete"]]
    assert (live["branch"] == "mental").sum() >= 15
    assert (live["branch"].isin(["disease", "mental"])).sum() >= 100
    assert df["obsolete"].sum() >= 1 and live["definition"].isna().sum() >= 1


def test_no_definition_at_all_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "nodef.obo"
    path.write_text("[Term]\nid: EFO:0000408\nname: disease\n")
    with pytest.raises(InputError, match="def:"):
        build_term_table(path)


def test_not_obo_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "efo.owl"
    path.write_text("<rdf:RDF></rdf:RDF>\n")
    with pytest.raises(InputError, match=r"no \[Term\]"):
        build_term_table(path)
