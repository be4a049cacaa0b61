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
    from testkit import DEMO

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


def test_coverage_report(tmp_path: Path) -> None:
    from clinsent.ontology.obo import coverage

    path = tmp_path / "efo.obo"
    path.write_text(OBO)
    cov = coverage(build_term_table(path)).set_index("branch")
    assert cov.loc["disease"].to_dict() == {
        "terms": 3,
        "obsolete": 0,
        "live": 3,
        "with_definition": 2,
        "with_umls_cui": 2,
        "with_definition_and_cui": 2,
    }
    assert cov.loc["mental"].to_dict() == {
        "terms": 1,
        "obsolete": 0,
        "live": 1,
        "with_definition": 1,
        "with_umls_cui": 1,
        "with_definition_and_cui": 1,
    }
    assert cov.loc["all", "terms"] == 6 and cov.loc["all", "obsolete"] == 1 and cov.loc["all", "with_definition"] == 3


def test_release_download_checks_the_pinned_sha256(tmp_path: Path) -> None:
    import hashlib

    from clinsent.ontology.download import download_release, release_url

    src = tmp_path / "efo.obo"
    src.write_text(OBO)
    good = hashlib.sha256(OBO.encode()).hexdigest()
    dest = tmp_path / "downloads" / "efo-3.92.0" / "efo.obo"
    assert download_release(src.as_uri(), dest, good) == good
    assert dest.read_text() == OBO
    bad_dest = tmp_path / "other" / "efo.obo"
    with pytest.raises(InputError, match="does not match the pinned"):
        download_release(src.as_uri(), bad_dest, "0" * 64)
    assert not bad_dest.exists() and not list(bad_dest.parent.iterdir())
    with pytest.raises(InputError, match=r"download failed.*Fix: .*ontology\.path"):
        download_release((tmp_path / "missing.obo").as_uri(), bad_dest, None)
    assert release_url("https://x/v{version}/efo.obo", "3.92.0") == "https://x/v3.92.0/efo.obo"


def test_a_circle_of_is_a_links_below_the_disease_root_is_refused_naming_its_terms(tmp_path: Path) -> None:
    """Issue 83: a file whose disease root is made a child of one of its own descendants was read,
    the root counted among the disease terms. Refused in one line naming the circle; a diamond
    (two paths to one term) is no circle."""
    from clinsent.ontology.obo import build_term_table, descendants

    circular = OBO.replace("id: EFO:0000408\nname: disease\n", "id: EFO:0000408\nname: disease\nis_a: EFO:2\n")
    path = tmp_path / "efo.obo"
    path.write_text(circular)
    with pytest.raises(InputError) as err:
        build_term_table(path)
    told = str(err.value)
    assert "\n" not in told and told.startswith(f"{path}: the is_a links below EFO:0000408 go round in a circle")
    assert "(EFO:0000408 -> EFO:0000677 -> EFO:2 -> EFO:0000408)" in told
    diamond = {"b": ["a"], "c": ["a"], "d": ["b", "c"], "e": ["d"]}
    assert descendants(diamond, "a") == {"b", "c", "d", "e"}
