"""A lenient line reader for OBO files such as EFO's ``efo.obo``.

EFO's OBO file is produced by ROBOT with checks off and is not strictly valid OBO (strict
parsers such as fastobo reject it), so this reader takes only what it needs from each
``[Term]`` stanza: id, name, def, EXACT synonyms, xrefs, is_a parents and obsolescence.
It reads line by line and keeps only those fields in memory.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from clinsent.errors import InputError

_QUOTED = re.compile(r'^"((?:[^"\\]|\\.)*)"(.*)$')
_UMLS = [re.compile(r"^UMLS(?:_CUI)?:(C\d{7})\b"), re.compile(r"linkedlifedata\.com/resource/umls/id/(C\d{7})\b")]

DISEASE_ROOT = "EFO:0000408"
MENTAL_ROOT = "EFO:0000677"


@dataclass
class OboTerm:
    id: str
    label: str = ""
    definition: str | None = None
    synonyms: list[str] = field(default_factory=list)
    xrefs: list[str] = field(default_factory=list)
    parents: list[str] = field(default_factory=list)
    obsolete: bool = False

    @property
    def umls_cuis(self) -> list[str]:
        cuis: list[str] = []
        for xref in self.xrefs:
            for pattern in _UMLS:
                m = pattern.search(xref)
                if m and m.group(1) not in cuis:
                    cuis.append(m.group(1))
        return cuis


def _unescape(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text)


def _quoted(value: str) -> tuple[str, str] | None:
    m = _QUOTED.match(value)
    return (_unescape(m.group(1)), m.group(2).strip()) if m else None


def _first_token(value: str) -> str:
    tokens = value.split("!", 1)[0].split("{", 1)[0].split()
    return tokens[0] if tokens else ""


def iter_obo_terms(lines: Iterable[str]) -> Iterator[OboTerm]:
    """Yield each ``[Term]`` stanza; other stanzas ([Typedef], [Instance]) are skipped."""
    term: OboTerm | None = None
    in_term = False
    for raw in lines:
        line = raw.rstrip("\n").rstrip("\r")
        if line.startswith("["):
            if term is not None:
                yield term
            term = None
            in_term = line.strip() == "[Term]"
            continue
        if not in_term or ":" not in line:
            continue
        tag, value = line.split(":", 1)
        value = value.strip()
        if tag == "id":
            term = OboTerm(id=value)
        elif term is None:
            continue
        elif tag == "name":
            term.label = value
        elif tag == "def":
            q = _quoted(value)
            term.definition = q[0] if q else value
        elif tag == "synonym":
            q = _quoted(value)
            if q and q[1].split()[:1] == ["EXACT"]:
                term.synonyms.append(q[0])
        elif tag == "xref":
            term.xrefs.append(value.split(" {", 1)[0].strip())
        elif tag == "is_a":
            parent = _first_token(value)
            if parent:
                term.parents.append(parent)
        elif tag == "is_obsolete":
            term.obsolete = value.lower() == "true"
    if term is not None:
        yield term


def descendants(terms: dict[str, OboTerm], root: str) -> set[str]:
    """All terms below ``root`` along is_a (``root`` itself excluded)."""
    children: dict[str, list[str]] = {}
    for t in terms.values():
        for p in t.parents:
            children.setdefault(p, []).append(t.id)
    seen: set[str] = set()
    queue = deque(children.get(root, []))
    while queue:
        node = queue.popleft()
        if node in seen:
            continue
        seen.add(node)
        queue.extend(children.get(node, []))
    return seen


def _read_header_version(path: Path) -> str:
    with open(path, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            if line.startswith("data-version:"):
                return line.split(":", 1)[1].strip()
            if line.startswith("["):
                break
    return "unknown"


TERM_COLUMNS = ["id", "label", "synonyms", "definition", "umls_cuis", "branch", "obsolete", "ontology_version"]


def build_term_table(path: str | Path, disease_root: str = DISEASE_ROOT, mental_root: str = MENTAL_ROOT) -> pd.DataFrame:
    """Parse an OBO file into the term table (one row per term, every branch).

    ``branch`` is ``mental`` under ``mental_root``, ``disease`` under ``disease_root``,
    otherwise ``other``. The roots themselves are ``other``.
    """
    path = Path(path)
    if not path.exists():
        raise InputError(path, "the ontology file does not exist", "set `ontology.path` to a local efo.obo")
    with open(path, encoding="utf-8", errors="strict") as fh:
        try:
            terms = {t.id: t for t in iter_obo_terms(fh)}
        except UnicodeDecodeError as exc:
            raise InputError(path, f"not UTF-8 ({exc})", "re-download the OBO release") from exc
    if not terms:
        raise InputError(path, "no [Term] stanza found", "point `ontology.path` at an OBO file (efo.obo), not OWL or JSON")
    if not any(t.definition for t in terms.values()):
        raise InputError(path, "no term has a `def:` line, so no entity could ever get a definition",
                         "use the full efo.obo release (definitions are in `def:` lines)")
    if disease_root not in terms:
        raise InputError(path, f"the disease root {disease_root} is not in the file",
                         "set `ontology.disease_root` to the disease class id of this ontology")
    mental = descendants(terms, mental_root)
    disease = descendants(terms, disease_root)
    version = _read_header_version(path)
    rows = []
    for t in terms.values():
        branch = "mental" if t.id in mental else "disease" if t.id in disease else "other"
        rows.append({
            "id": t.id, "label": t.label, "synonyms": t.synonyms, "definition": t.definition,
            "umls_cuis": t.umls_cuis, "branch": branch, "obsolete": t.obsolete, "ontology_version": version,
        })
    return pd.DataFrame(rows, columns=TERM_COLUMNS)
