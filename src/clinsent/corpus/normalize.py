"""Normalise MIMIC note text before sentence splitting.

1. Every de-identification placeholder ``[** ... **]`` (even one a hard wrap cut in two) is
   replaced by one typed surrogate word (``DATE``, ``NAME``, ``HOSPITAL``, ...), so the
   splitter never cuts inside one and the same kind of PHI always reads the same.
2. Soft line wraps are unwrapped: a newline becomes a space when the line before is long
   (it was wrapped because it hit the margin) and the next line does not start a unit of its
   own (list item, ``#`` problem line, ``Header:`` line). Blank lines, headers and list items
   stay as boundaries.

Sentence offsets are offsets into the normalised text; ``NORM_VERSION`` is stored with them.
"""

from __future__ import annotations

import re

NORM_VERSION = "mimic-norm-2"  # 2: over-long lines are cut before pysbd

DEID = re.compile(r"\[\*\*(.*?)\*\*\]", re.S)
_UNIT_START = re.compile(r"^\s*(?:\d{1,2}[.)]\s|[-*\u2022#]|[A-Z][A-Za-z /&()-]{0,40}:(?:\s|$))")
_DATE_LIKE = re.compile(r"^[\d\s/-]*\d[\d\s/-]*$")

_SURROGATES: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"hospital|clinic|ward|unit name", re.I), "HOSPITAL"),
    (re.compile(r"name|initials|lastname", re.I), "NAME"),
    (re.compile(r"location|address|state|country|street|zip", re.I), "LOCATION"),
    (re.compile(r"telephone|fax|phone|pager", re.I), "PHONE"),
    (re.compile(r"number|identifier|\bid\b|serial|record|clip", re.I), "ID"),
    (re.compile(r"age over", re.I), "AGE"),
    (re.compile(r"date|month|year|day|holiday|time", re.I), "DATE"),
    (re.compile(r"company|university|college|organization", re.I), "ORGANIZATION"),
]


def surrogate(inner: str) -> str:
    """The typed surrogate word for the inside of one placeholder."""
    text = " ".join(inner.split())
    if not text or _DATE_LIKE.match(text):
        return "DATE"
    for pattern, word in _SURROGATES:
        if pattern.search(text):
            return word
    return "DEID"


def replace_placeholders(text: str) -> str:
    return DEID.sub(lambda m: surrogate(m.group(1)), text)


def unwrap_soft_breaks(text: str, min_wrapped_line: int = 40) -> str:
    """Turn soft wraps into spaces (same length, so offsets are kept)."""
    lines = text.split("\n")
    out: list[str] = []
    for i, line in enumerate(lines):
        out.append(line)
        if i == len(lines) - 1:
            break
        nxt = lines[i + 1]
        soft = (
            line.strip() != ""
            and nxt.strip() != ""
            and len(line.rstrip()) >= min_wrapped_line
            and not line.rstrip().endswith(":")
            and not _UNIT_START.match(nxt)
        )
        out.append(" " if soft else "\n")
    return "".join(out)


def normalize_note(text: str, min_wrapped_line: int = 40) -> str:
    """Placeholders replaced, CRLF folded, soft wraps unwrapped."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return unwrap_soft_breaks(replace_placeholders(text), min_wrapped_line)
