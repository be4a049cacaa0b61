"""Write the demo ontology in EFO's OBO release layout (demo data, written by this project).

The file deliberately carries what makes the real efo.obo awkward: several UMLS xref spellings,
trailing modifiers and comments, escaped quotes, RELATED synonyms that must not be used as
names, obsolete terms that share a CUI with a live one, terms with no definition, a
non-disease branch, a ``KEGG COMPOUND`` xref with a space, and a ``[Typedef]`` stanza.
"""

from __future__ import annotations

import random
from pathlib import Path

from clinsent.demo.vocabulary import CATEGORIES, DISEASE_ROOT, MENTAL_ROOT, DemoTerm, load_terms
from clinsent.io.files import write_text

_HEADER = """format-version: 1.2
data-version: demo/2026-11-01
ontology: efo
remark: DEMO DATA written for the clinsent pipeline; not an EFO release.
"""


def _quote(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def _stanza(lines: list[str]) -> str:
    return "[Term]\n" + "\n".join(lines) + "\n"


def _umls_xref(cui: str, style: int) -> str:
    if style == 0:
        return f"xref: UMLS:{cui}"
    if style == 1:
        return f'xref: UMLS:{cui} {{source="MONDO:equivalentTo"}}'
    if style == 2:
        return f"xref: UMLS_CUI:{cui}"
    return f"xref: http://linkedlifedata.com/resource/umls/id/{cui}"


def _term_stanza(term: DemoTerm, parent: tuple[str, str], rng: random.Random) -> str:
    lines = [f"id: {term.efo_id}", f"name: {term.label}"]
    if term.definition:
        lines.append(f'def: "{_quote(term.definition)}" [DEMO:clinsent]')
    for syn in (*term.synonyms, *term.abbreviations):
        lines.append(f'synonym: "{_quote(syn)}" EXACT []')
    if rng.random() < 0.3:
        lines.append(f'synonym: "{_quote(term.label)} (disorder)" RELATED [DEMO:clinsent]')
    lines.append(_umls_xref(term.cui, rng.randrange(4)))
    lines.append(f"xref: MONDO:{int(term.efo_id.split(':')[1]) - 8000000:07d}")
    lines.append(f"is_a: {parent[0]} ! {parent[1]}")
    return _stanza(lines)


def render_demo_obo(seed: int = 13) -> str:
    """The whole demo OBO file as text (deterministic for a given seed)."""
    rng = random.Random(seed)
    terms = load_terms()
    out = [_HEADER]
    out.append(_stanza(["id: EFO:0000001", "name: experimental factor"]))
    out.append(
        _stanza(
            [
                f"id: {DISEASE_ROOT}",
                "name: disease",
                'def: "A disposition to undergo pathological processes that exists in an organism '
                'because of one or more disorders in that organism." [DEMO:clinsent]',
                "xref: MONDO:0000001",
                "is_a: EFO:0000001 ! experimental factor",
            ]
        )
    )
    for cid, name in CATEGORIES.values():
        lines = [f"id: {cid}", f"name: {name}", f'is_a: {DISEASE_ROOT} {{source="DEMO"}} ! disease']
        if cid == MENTAL_ROOT:
            lines.insert(2, "xref: MONDO:0005084")
        out.append(_stanza(lines))
    for term in terms:
        out.append(_term_stanza(term, CATEGORIES[term.category], rng))
    # A non-disease branch: defined, cross-referenced, and still never a disease entity.
    out.append(_stanza(["id: EFO:0001444", "name: measurement", "is_a: EFO:0000001 ! experimental factor"]))
    for i, (name, cui, definition) in enumerate(
        [
            ("blood pressure measurement", "C0005823", "The measurement of the pressure of blood in the arteries."),
            ("body mass index", "C1305855", "Body weight in kilograms divided by the square of height in metres."),
            ("glucose measurement", "C0337438", "The measurement of the amount of glucose in a sample."),
        ]
    ):
        out.append(
            _stanza(
                [
                    f"id: EFO:910{i:04d}",
                    f"name: {name}",
                    f'def: "{definition}" [DEMO:clinsent]',
                    f"xref: UMLS:{cui}",
                    "xref: KEGG COMPOUND:C00031" if i == 2 else "xref: NCIT:C25298",
                    "is_a: EFO:0001444 ! measurement",
                ]
            )
        )
    # Obsolete terms: one shares a CUI with a live term and has a misleading definition.
    by_label = {t.label: t for t in terms}
    for i, (label, live) in enumerate(
        [
            ("diabetes type II", "type 2 diabetes mellitus"),
            ("cardiac insufficiency", "congestive heart failure"),
            ("manic-depressive illness", "bipolar disorder"),
            ("renal insufficiency", "chronic kidney disease"),
        ]
    ):
        target = by_label[live]
        out.append(
            _stanza(
                [
                    f"id: EFO:920{i:04d}",
                    f"name: obsolete_{label}",
                    f'def: "OBSOLETE. Superseded demo term for {label}." [DEMO:clinsent]',
                    f"xref: UMLS:{target.cui}",
                    "is_obsolete: true",
                    f"replaced_by: {target.efo_id}",
                ]
            )
        )
    out.append("[Typedef]\nid: part_of\nname: part of\nxref: BFO:0000050\n")
    return "\n".join(out)


def write_demo_obo(path: Path, seed: int = 13) -> None:
    write_text(render_demo_obo(seed), path)  # the one way out: atomic, through the guard
