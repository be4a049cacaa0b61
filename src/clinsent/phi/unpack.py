"""What a file packs, read as a person could read it: UTF-8 or UTF-16 text (:func:`_decode`),
gzip members, base64 runs and data URIs, PDF streams and the text they show, PNG text chunks
(:func:`_inner`, one level of packing at a time).
"""

from __future__ import annotations

import re
from collections.abc import Iterator


def _decode(data: bytes) -> str:
    """Text as a person would read it: UTF-16 by its byte-order mark (or by NUL bytes between
    ASCII letters), else UTF-8 with bad bytes replaced."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16", errors="replace")
    head = data[:4096]
    if head.count(b"\x00") > len(head) // 4:
        return data.decode("utf-16-le" if head[1:2] == b"\x00" else "utf-16-be", errors="replace")
    return data.decode("utf-8", errors="replace")


_DATA_URI = re.compile(rb"data:[\w/+.-]*(?:;[\w=.-]+)*;base64,([A-Za-z0-9+/]+={0,2})")


_BASE64_RUN = re.compile(rb"[A-Za-z0-9+/]{200,}={0,2}")


_PDF_STREAM = re.compile(rb"stream\r?\n(.*?)\r?\nendstream", re.S)


def _png_text(body: bytes) -> bytes:
    """tEXt: keyword, NUL, Latin-1 text."""
    return body.replace(b"\x00", b" ", 1)


def _png_ztext(body: bytes) -> bytes:
    """zTXt: keyword, NUL, method byte, zlib-compressed text."""
    import zlib

    key, _, rest = body.partition(b"\x00")
    try:
        return key + b" " + zlib.decompress(rest[1:])
    except zlib.error:
        return body


def _png_itext(body: bytes) -> bytes:
    """iTXt: keyword, NUL, compression flag, method, language tag NUL, translated keyword NUL, text
    (UTF-8, zlib-compressed when the flag is 1)."""
    import zlib

    key, _, rest = body.partition(b"\x00")
    text = rest[2:].split(b"\x00", 2)[-1]
    try:
        return key + b" " + (zlib.decompress(text) if rest[:1] == b"\x01" else text)
    except zlib.error:
        return body


_PDF_TEXT_OBJECT = re.compile(rb"BT\b(.*?)\bET\b", re.S)


_PDF_SHOWN = re.compile(
    rb"\[((?:\s*(?:\((?:[^)\\]|\\.)*\)|<[0-9A-Fa-f\s]*>|[-+]?[\d.]+))*)\s*\]\s*TJ"
    rb"|\(((?:[^)\\]|\\.)*)\)\s*(?:Tj|'|\")",
    re.S,
)


_PDF_STRING = re.compile(rb"\(((?:[^)\\]|\\.)*)\)", re.S)


_PDF_ESCAPE = re.compile(rb"\\([0-7]{1,3}|.)", re.S)


_PDF_ESCAPES = {b"n": b"\n", b"r": b"\r", b"t": b"\t", b"b": b"\b", b"f": b"\f"}


def _pdf_unescape(raw: bytes) -> bytes:
    def one(m: re.Match[bytes]) -> bytes:
        code = m.group(1)
        return bytes([int(code, 8) & 0xFF]) if code[:1].isdigit() else _PDF_ESCAPES.get(code, code)

    return _PDF_ESCAPE.sub(one, raw)


def _pdf_text(stream: bytes) -> bytes:
    """The text a PDF content stream shows, as a reader copies it: the strings of each text
    object's ``Tj`` and ``TJ`` operators joined (matplotlib cuts a line into one string per
    kerned letter run: ``[ (Hel) 0.3 (lo) ] TJ``), a line per text object."""
    lines = []
    for block in _PDF_TEXT_OBJECT.finditer(stream):
        parts = []
        for m in _PDF_SHOWN.finditer(block.group(1)):
            strings = _PDF_STRING.findall(m.group(1)) if m.group(1) is not None else [m.group(2)]
            parts.append(b"".join(_pdf_unescape(x) for x in strings))
        lines.append(b"".join(parts))
    return b"\n".join(lines)


# PNG chunk type -> its text (the chunks that carry text)
_PNG_TEXT = {b"tEXt": _png_text, b"zTXt": _png_ztext, b"iTXt": _png_itext}


def _inner(data: bytes, depth: int = 0) -> Iterator[tuple[str, bytes]]:
    """(where, bytes) of what a file holds besides its own bytes, one level of packing at a time:
    gzip members, base64 runs and data URIs (the report HTML of ``snakemake --report`` embeds
    every file so), PDF streams (Flate-compressed or not), PNG text chunks."""
    import base64
    import gzip
    import zlib

    if depth > 3:
        return
    if data[:2] == b"\x1f\x8b":
        try:
            inner = gzip.decompress(data)
        except (OSError, EOFError):
            inner = b""
        yield "gzip", inner
        yield from ((f"gzip/{w}", b) for w, b in _inner(inner, depth + 1))
        return
    if data[:8] == b"\x89PNG\r\n\x1a\n":
        pos = 8
        while pos + 8 <= len(data):
            size, chunk_type = int.from_bytes(data[pos : pos + 4], "big"), data[pos + 4 : pos + 8]
            read = _PNG_TEXT.get(chunk_type)
            if read is not None:
                yield f"png text chunk at {pos}", read(data[pos + 8 : pos + 8 + size])
            pos += 12 + size
        return
    if data[:5] == b"%PDF-":
        for m in _PDF_STREAM.finditer(data):
            try:
                body = zlib.decompress(m.group(1))
            except zlib.error:
                body = m.group(1)
            yield f"pdf stream at byte {m.start()}", body
            if b"BT" in body:
                yield f"pdf text of the stream at byte {m.start()}", _pdf_text(body)
        return
    for pattern in (_DATA_URI, _BASE64_RUN):
        for m in pattern.finditer(data):
            run = m.group(1) if pattern is _DATA_URI else m.group(0)
            try:
                decoded = base64.b64decode(run + b"=" * (-len(run) % 4), validate=True)
            except ValueError:
                continue
            where = f"base64 at byte {m.start()}"
            yield where, decoded
            yield from ((f"{where}/{w}", b) for w, b in _inner(decoded, depth + 1))
