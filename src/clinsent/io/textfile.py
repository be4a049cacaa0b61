"""One decoding policy for every text file a reader opens (sentence corpora, STS, NLI, RQE,
probe, CoNLL, ontology and JSON-lines files), and one rule set for the text in them:

- UTF-8, strictly: a byte sequence that is not UTF-8 stops the reader with the file, the line
  and the byte's offset in that line (never the bytes or the line's text), and the fix;
- a UTF-8 byte-order mark at the start is dropped (and counted in the log), so it never stays
  glued to the first sentence or header;
- UTF-16 with a byte-order mark is decoded; a file holding NUL bytes without one (UTF-16 or
  UTF-32 saved without a mark, or a binary file) is refused: decoded as UTF-8 it would become
  "sentences" of ``\\x00``-separated letters.

And in every reader, whatever the layout: a text holding a NUL character or a lone surrogate
(JSON's ``\\u0000`` and ``\\ud800`` escapes decode to them, and no encoder writes them back) is
refused, naming the file and the line (:func:`text_problem`, :func:`json_line`); a quoted CSV
field that never closes is refused, naming the line it opens on, never taken whole to the end
of the file (:func:`csv_rows`).

Python's text mode does none of this by itself: ``open(encoding="utf-8")`` keeps the BOM as
U+FEFF, reads UTF-16 without a BOM as NUL-laced text, and its ``UnicodeDecodeError`` names a
position in the whole file (and quotes the byte) rather than a line.
"""

from __future__ import annotations

import codecs
import csv
import io
import json
import logging
import re
from collections.abc import Generator, Iterable, Iterator
from pathlib import Path
from typing import Any

from clinsent.errors import InputError
from clinsent.safety.content import check_regular

log = logging.getLogger(__name__)

_FIX = "save the file as UTF-8 (e.g. iconv -f <its encoding> -t utf-8 FILE > FILE.utf8)"


def text_lines(path: str | Path) -> Generator[str, None, None]:
    """The lines of ``path`` decoded by the policy above, each with its line ending (as text mode
    with ``newline=""``, so ``csv`` readers see quoted line breaks). A missing file raises
    ``FileNotFoundError`` for the caller to name; a FIFO or another special file is refused first
    (reading one could wait forever)."""
    check_regular(path, "give the text file itself")
    with open(path, "rb") as fh:
        head = fh.read(4096)
        fh.seek(0)
        if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
            yield from _utf16(fh, path)
            return
        if b"\x00" in head:
            at = head[: head.index(b"\x00")].count(b"\n") + 1
            raise InputError(
                f"{path}:{at}",
                "holds NUL bytes: UTF-16 or UTF-32 saved without a byte-order mark, or not a text file",
                _FIX,
            )
        if head.startswith(codecs.BOM_UTF8):
            fh.read(len(codecs.BOM_UTF8))
            log.info("%s: a UTF-8 byte-order mark at the start was dropped", path)
        for number, raw in enumerate(fh, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InputError(f"{path}:{number}", f"byte {exc.start + 1} of the line is not UTF-8", _FIX) from None
            if "\x00" in line:
                raise InputError(f"{path}:{number}", "the line holds a NUL byte (not a text line)", _FIX)
            yield line


_SURROGATE = re.compile("[\ud800-\udfff]")


def text_problem(text: str) -> str | None:
    """What makes ``text`` no text (a NUL character, a lone surrogate), or None."""
    if "\x00" in text:
        return "holds a NUL character (\\u0000: not text)"
    if _SURROGATE.search(text):
        return "holds a lone surrogate (\\ud800-\\udfff: half of a character, which no encoder writes)"
    return None


def check_texts(value: Any, where: str, fix: str = _FIX) -> None:
    """Every string in ``value`` (a string, or a JSON value: its keys and items too) is text
    (:func:`text_problem`), or an :class:`InputError` at ``where`` (the file and line)."""
    if isinstance(value, str):
        problem = text_problem(value)
        if problem is not None:
            raise InputError(where, f"a value {problem}", fix)
    elif isinstance(value, dict):
        for key, item in value.items():
            check_texts(key, where, fix)
            check_texts(item, where, fix)
    elif isinstance(value, list):
        for item in value:
            check_texts(item, where, fix)


def json_line(line: str, where: str, fix: str) -> Any:
    """One JSON-lines line decoded, every string in it text (:func:`check_texts`); a line that is
    not JSON stops at ``where`` (the file and line), never quoting it."""
    try:
        value = json.loads(line)
    except json.JSONDecodeError as exc:
        raise InputError(where, f"not JSON ({exc.msg}, character {exc.colno})", fix) from None
    check_texts(value, where, "write every string as text: no \\u0000, no lone \\ud800-\\udfff escape")
    return value


def csv_rows(lines: Iterable[str], path: str | Path, **fmt: Any) -> Iterator[tuple[int, list[str]]]:
    """(line the row starts on, its fields) of a CSV or TSV read with ``csv.reader(lines, **fmt)``,
    strictly: a quoted field that never closes (the reader would take the rest of the file as its
    text) or a stray quote stops, naming the line the row starts on."""
    reader = csv.reader(lines, strict=True, **fmt)
    while True:
        start = reader.line_num + 1
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            if "field limit" in str(exc):  # csv's own words, never the data's
                raise InputError(f"{path}:{start}", f"a field is too long ({exc})", "check the quoting") from None
            raise InputError(
                f"{path}:{start}",
                "a quoted field of the row that starts on this line never closes (or a quote stands inside an "
                "unquoted field): the rest of the file would be read as its text",
                'close the quote; a quote inside a quoted field is written twice ("")',
            ) from None
        yield start, row


def _utf16(fh: io.BufferedReader, path: str | Path) -> Iterator[str]:
    log.info("%s: UTF-16 (byte-order mark): decoded", path)
    text = io.TextIOWrapper(fh, encoding="utf-16", newline="")
    number = 0
    try:
        for number, line in enumerate(text, start=1):  # noqa: B007  (number names the bad line below)
            yield line
    except UnicodeDecodeError:
        raise InputError(
            f"{path}:{number + 1}", "not valid UTF-16 although the file starts with its byte-order mark", _FIX
        ) from None
    finally:
        text.detach()


def _name_key(name: str) -> str:
    return re.sub(r"[\s_-]+", "", name).lower()


def header_lacks(header: list[str], missing: list[str]) -> str:
    """The problem of a header line that lacks ``missing`` columns, without its values (a file
    with no header line would show its first data row): the field count, and a field that is a
    near miss of a wanted name (case, spaces, ``_`` or ``-`` apart), which is a name, not text."""
    keys = {_name_key(m): m for m in missing}
    near = [f"{h!r} for {keys[_name_key(h)]!r}" for h in header if _name_key(h) in keys]
    return (
        f"the header line lacks {missing} ({len(header)} field(s); the values are not shown, since a file without "
        f"a header line would show a data row{'; near misses: ' + ', '.join(near) if near else ''})"
    )


# a text file's layout by its first character, and the word a format's name carries when it reads it
LAYOUTS = {
    "{": ("JSON lines", "its first line is a JSON object", "jsonl"),
    "<": ("XML", "it starts with a tag", "xml"),
}


def table_header(path: str | Path, formats: Iterable[str] = ()) -> list[str]:
    """The header line of a TSV, CSV or parquet table alone (its column names, by the file's
    suffix; no row is read): what the dry run checks of an eval file (``Task.check_header``). A
    file that is not a table (JSON lines, XML) stops here, naming the layout it has and, among
    ``formats`` (the names its task's readers take), the ones that read it."""
    path = Path(path)
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        return [str(c) for c in pq.read_schema(path).names]
    lines = text_lines(path)
    first_line = next((line for line in lines if line.strip()), "")
    lines.close()
    found = LAYOUTS.get(first_line.lstrip()[:1])
    if found is not None:
        layout, why, word = found
        readers = [f for f in formats if word in f]
        raise InputError(
            f"{path}:1",
            f"is {layout} ({why}), and this format reads a table (TSV, CSV or parquet, a header line of column names)",
            f"declare format: {' or '.join(readers)}, which reads {layout}"
            if readers
            else f"no format of this task reads {layout}: write the file as a table with the columns it names",
        )
    lines = text_lines(path)
    fmt: dict[str, Any] = {} if path.suffix == ".csv" else {"delimiter": "\t", "quoting": csv.QUOTE_NONE}
    first = next((r for _, r in csv_rows(lines, path, **fmt) if any(c.strip() for c in r)), [])
    lines.close()  # the rest of the file is the job's to read
    return [h.strip() for h in first]


def check_columns(path: str | Path, wanted: list[str], fix: str, formats: Iterable[str] = ()) -> None:
    """Raise naming the file's line 1 when its header lacks ``wanted`` columns (values never shown);
    ``formats``: the names its task's readers take (a file that is no table names those that read it)."""

    header = table_header(path, formats)
    missing = [c for c in wanted if c not in header]
    if missing:
        raise InputError(f"{path}:1", header_lacks(header, missing), fix)
