"""A lenient line reader for OBO files such as EFO's ``efo.obo``, registered as the reader of
``ontology.path`` (:data:`ONTOLOGY_FORMATS`, kind ``ontology``, format ``obo``).

EFO's OBO file is produced by ROBOT with checks off and is not strictly valid OBO (strict
parsers such as fastobo reject it), so this reader takes only what it needs from each
``[Term]`` stanza: id, name, def, EXACT synonyms, xrefs, is_a parents and obsolescence.
It reads line by line and keeps only those fields, column by column, in memory.

Lenient in what it skips, strict in what it keeps, by the readers' one rule set
(:mod:`clinsent.io.textfile`): the file is UTF-8 without NUL bytes (the line of a bad byte
named); a term's ``id:`` is not empty and is no other term's id (both lines named: the
entities linked to a duplicated id would get two rows); a ``def:`` or ``synonym:`` text that
opens a quote closes it on its line (a lenient reader would keep the rest of the line, refs and
all, as the definition). The dry run reads the file's first :data:`CHECKED_TERMS` terms by the
same rules; the job reads them all.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from clinsent.errors import InputError
from clinsent.io.reading import Readers, check_file
from clinsent.io.textfile import text_lines

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


def _quoted_or_refused(value: str, tag: str, where: str | None) -> tuple[str, str] | None:
    """A quoted ``def:`` or ``synonym:`` value; one that opens a quote it never closes is refused
    at ``where`` (the file and line) when the reader knows it."""
    q = _quoted(value)
    if q is None and value.startswith('"') and where is not None:
        raise InputError(
            where,
            f"the {tag}: text opens a quote that does not close on its line (the rest of the line would be "
            "read as its text)",
            f'close the quote: {tag}: "text" [references]; a quote inside the text is written \\"',
        )
    return q


def iter_obo_terms(lines: Iterable[str], path: str | Path | None = None) -> Iterator[OboTerm]:
    """Yield each ``[Term]`` stanza; other stanzas ([Typedef], [Instance]) are skipped. With
    ``path`` the rules of the module hold, each refusal naming ``path`` and the line."""
    term: OboTerm | None = None
    in_term = False
    first_line: dict[str, int] = {}  # id -> the line it was given on
    for number, raw in enumerate(lines, start=1):
        line = raw.rstrip("\n").rstrip("\r")
        where = f"{path}:{number}" if path is not None else None
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
            if where is not None:
                if not value:
                    raise InputError(where, "the term's id is empty", "give every [Term] an id, e.g. id: EFO:0000408")
                if value in first_line:
                    raise InputError(
                        where,
                        f"the term's id is also the id of the term at line {first_line[value]} (the entities "
                        "linked to it would get two rows)",
                        "keep one [Term] stanza per id: merge the two",
                    )
                first_line[value] = number
            term = OboTerm(id=value)
        elif term is None:
            continue
        elif tag == "name":
            term.label = value
        elif tag == "def":
            q = _quoted_or_refused(value, tag, where)
            term.definition = q[0] if q else value
        elif tag == "synonym":
            q = _quoted_or_refused(value, tag, where)
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


def is_a_circle(children: dict[str, list[str]], root: str) -> list[str] | None:
    """A circle of is_a links below ``root`` (its terms, the first repeated at the end), or None.
    Depth-first over the children with the path kept, without recursion (EFO is deep)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []
    stack: list[tuple[str, int]] = [(root, 0)]
    while stack:
        node, i = stack.pop()
        if i == 0:
            state[node] = 1
            path.append(node)
        kids = children.get(node, [])
        if i < len(kids):
            stack.append((node, i + 1))
            kid = kids[i]
            if state.get(kid) == 1:
                return [*path[path.index(kid) :], kid]
            if kid not in state:
                stack.append((kid, 0))
        else:
            state[node] = 2
            path.pop()
    return None


def descendants(parents: dict[str, list[str]], root: str, where: str | Path | None = None) -> set[str]:
    """All terms below ``root`` along is_a (``root`` itself excluded); ``parents`` maps id -> is_a
    parents. A circle of is_a links below it (a term its own ancestor: the root would count
    among its own descendants) is refused, naming its terms."""
    children: dict[str, list[str]] = {}
    for term_id, ps in parents.items():
        for p in ps:
            children.setdefault(p, []).append(term_id)
    circle = is_a_circle(children, root)
    if circle is not None:
        shown = " -> ".join(circle[:8]) + (" -> ..." if len(circle) > 8 else "")
        raise InputError(
            where or "ontology",
            f"the is_a links below {root} go round in a circle ({shown}): a term would be its own ancestor",
            "fix those terms' is_a lines, or use the pinned EFO release (ontology.path: null)",
        )
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
    lines = text_lines(path)
    try:
        for line in lines:
            if line.startswith("data-version:"):
                return line.split(":", 1)[1].strip()
            if line.startswith("["):
                break
    finally:
        lines.close()
    return "unknown"


TERM_COLUMNS = ["id", "label", "synonyms", "definition", "umls_cuis", "branch", "obsolete", "ontology_version"]


def build_term_table(
    path: str | Path, disease_root: str = DISEASE_ROOT, mental_root: str = MENTAL_ROOT
) -> pd.DataFrame:
    """Parse an OBO file into the term table (one row per term, every branch).

    ``branch`` is ``mental`` under ``mental_root``, ``disease`` under ``disease_root``,
    otherwise ``other``. The roots themselves are ``other``.
    """
    path = Path(path)
    if not path.exists():
        raise InputError(path, "the ontology file does not exist", "set `ontology.path` to a local efo.obo")
    # one pass, straight into columns: no per-term objects are kept (bounded by the table itself)
    cols: dict[str, list[object]] = {c: [] for c in ("id", "label", "synonyms", "definition", "umls_cuis", "obsolete")}
    parents: dict[str, list[str]] = {}
    for t in iter_obo_terms(text_lines(path), path):  # UTF-8, no NUL byte, the module's rules
        cols["id"].append(t.id)
        cols["label"].append(t.label)
        cols["synonyms"].append(t.synonyms)
        cols["definition"].append(t.definition)
        cols["umls_cuis"].append(t.umls_cuis)
        cols["obsolete"].append(t.obsolete)
        if t.parents:
            parents[t.id] = t.parents
    if not cols["id"]:
        raise InputError(
            path, "no [Term] stanza found", "point `ontology.path` at an OBO file (efo.obo), not OWL or JSON"
        )
    if not any(cols["definition"]):
        raise InputError(
            path,
            "no term has a `def:` line, so no entity could ever get a definition",
            "use the full efo.obo release (definitions are in `def:` lines)",
        )
    if disease_root not in cols["id"]:
        raise InputError(
            path,
            f"the disease root {disease_root} is not in the file",
            "set `ontology.disease_root` to the disease class id of this ontology",
        )
    disease = descendants(parents, disease_root, path)
    mental = descendants(parents, mental_root, path)
    df = pd.DataFrame(cols)
    df["branch"] = ["mental" if i in mental else "disease" if i in disease else "other" for i in df["id"]]
    df["ontology_version"] = _read_header_version(path)
    return df[TERM_COLUMNS]


def coverage(terms: pd.DataFrame) -> pd.DataFrame:
    """How much of the disease and mental-disorder branches can give definitions.

    One row per branch (``disease`` counts the whole disease branch, mental disorders
    included; ``mental`` the mental-disorder branch alone; ``all`` every term), with the
    number of terms, live terms, and live terms with a definition, a UMLS CUI, or both.
    """
    under_disease = terms["branch"].isin(["disease", "mental"])
    rows = []
    for name, mask in (
        ("disease", under_disease),
        ("mental", terms["branch"] == "mental"),
        ("all", pd.Series(True, index=terms.index)),
    ):
        t = terms[mask]
        live = t[~t["obsolete"]]
        has_def = live["definition"].notna() & (live["definition"].fillna("").str.len() > 0)
        has_cui = live["umls_cuis"].map(len) > 0
        rows.append(
            {
                "branch": name,
                "terms": len(t),
                "obsolete": int(t["obsolete"].sum()),
                "live": len(live),
                "with_definition": int(has_def.sum()),
                "with_umls_cui": int(has_cui.sum()),
                "with_definition_and_cui": int((has_def & has_cui).sum()),
            }
        )
    return pd.DataFrame(rows)


CHECKED_TERMS = 1000  # the terms the dry run reads of an ontology (the job reads them all)


def check_obo(path: Path, entry: Mapping[str, Any], where: str) -> None:
    """The dry run's check of an OBO file: a readable text file, and its first
    :data:`CHECKED_TERMS` terms by the module's rules."""
    check_file(path, f"set `{where}` to a local efo.obo")
    lines = text_lines(path)
    try:
        for _ in zip(range(CHECKED_TERMS), iter_obo_terms(lines, path), strict=False):
            pass
    finally:
        lines.close()


# the ontology's readers (``ontology.path``): one format today, EFO's OBO release
ONTOLOGY_FORMATS: Readers[Callable[..., pd.DataFrame]] = Readers("ontology", "ontology format", "ontology.path")
ONTOLOGY_FORMATS.register("obo", check=check_obo)(build_term_table)
