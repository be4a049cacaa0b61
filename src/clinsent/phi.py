"""The PHI guard: folders that hold note text are owner-only, and files meant for sharing are
searched for note text before a run is done.

- :data:`NOTE_DIRS`: the results folders that hold note text (notes, sentences, entities, batch
  plans, checkpoints, documents, training rows and embeddings with their texts); each job, as it
  starts and before it writes, gives the one it writes into ``phi.dir_mode`` (0700), tightening
  a folder made by an earlier run too (:func:`protect_job`, called by every job script).
- :func:`sample_ngrams`: a seeded sample of word n-grams of the notes (``phi.ngram`` words each,
  ``phi.sample`` of them from ``phi.notes`` notes), kept only as salted hashes, so the sample file
  holds no text.
- :func:`scan`: every shared file (tables, figures and their data, ``summary.csv``, logs and
  ``.err`` files, benchmarks, everything under ``models/`` but the weights, the HTML report) is
  read as a person could read it: UTF-8 or UTF-16 text, and what it packs (gzip, base64 runs and
  the data URIs in which ``snakemake --report`` embeds every file, PDF streams and the text
  they show, PNG text chunks); each is cut into the same n-grams, and a hash in the sample is a
  leak, reported with the file, the packed piece and the byte offset (never the text), and the
  scan fails.
- :func:`quarantine`: a failed scan moves every flagged file (a trained model: its whole run
  folder) into an owner-only ``phi/quarantine/<time>/`` folder and records the failure in
  ``phi/scan_failed.json``; while that record stands, ``snakemake --report`` refuses to build
  (:func:`refuse_report`). The moved outputs are missing, so the next run rebuilds them and
  scans again; a passing scan removes the record.

Sampled n-grams catch verbatim copies of runs of ``ngram`` words, and a leak of a few sentences
only with the chance that one of its n-grams is in the sample: the scan is a tripwire, not a proof.
Boilerplate that many notes share (headers such as "Discharge Date") would match legitimately
shared text, so n-grams with fewer than ``min_letters`` letters, or found in more than
``max_share`` of the drawn notes, are not sampled.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

# results folders (relative to `results`) that hold note text or text derived from it
NOTE_DIRS = (
    "corpus",
    "sets",
    "ner",
    "batches",
    "checkpoints",
    "documents",
    "doc_tasks",
    "training_rows",
    "sentence_corpora",
    "embeddings",
    "corpus_embeddings",
    "phi",
)
# results folders whose files are made from the notes: an eval set read from one holds note text
NOTES_DERIVED = ("corpus", "sets", "ner", "documents", "doc_tasks")


def derived_from_notes(path: str | Path, results: str | Path, notes: Iterable[str | Path] = ()) -> bool:
    """``path`` is one of the notes' files or lies in a results folder made from them."""
    target = Path(os.path.abspath(path))
    if any(target == Path(os.path.abspath(n)) for n in notes):
        return True
    root = Path(os.path.abspath(results))
    return any(target.is_relative_to(root / d) for d in NOTES_DERIVED)


# what a shared results folder may contain, and is scanned
SHARED = ("tables", "figures", "stats", "logs", "benchmarks", "summary.csv", "metrics", "finetune", "cross_encoder")
# every file of the shared folders is scanned, and what it packs (gzip, base64 and data URIs, PDF
# streams, PNG text chunks); under models/ every file but the weights
WEIGHTS = {".safetensors", ".bin", ".pt", ".pth", ".ckpt", ".onnx", ".h5", ".msgpack"}
_WORD = re.compile(r"[^\W_]+(?:['’-][^\W_]+)*", re.UNICODE)


def protect_dirs(results: str | Path, paths: Iterable[str | Path], mode: int | None) -> list[Path]:
    """Give the note-text folders under ``results`` that ``paths`` (a job's outputs and working
    folders) lie in ``mode``, creating them if needed; None leaves them. Called as each job
    starts, before it writes: a folder only exists once a job of the run writes into it."""
    if mode is None:
        return []
    root = Path(os.path.abspath(results))
    done = []
    for p in paths:
        rel = Path(os.path.abspath(p))
        if not rel.is_relative_to(root) or rel == root:
            continue
        top = root / rel.relative_to(root).parts[0]
        if top.name in NOTE_DIRS and top not in done:
            top.mkdir(parents=True, exist_ok=True, mode=mode)
            os.chmod(top, mode)
            done.append(top)
    return done


def protect_job(smk: Any) -> list[Path]:
    """:func:`protect_dirs` for a Snakemake job: its outputs and any folder param (a checkpoint folder)."""
    config = getattr(smk, "config", None) or {}
    results = config.get("results")
    mode = (config.get("phi") or {}).get("dir_mode", "0700")
    if not results:
        return []
    paths = [*smk.output, *(v for v in dict(smk.params.items()).values() if isinstance(v, str))]
    return protect_dirs(results, paths, int(mode, 8) if mode else None)


def words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def _hash(gram: Iterable[str], salt: bytes) -> bytes:
    return hashlib.blake2b(" ".join(gram).encode(), key=salt, digest_size=12).digest()


@dataclass(frozen=True)
class Sample:
    """Salted hashes of sampled note n-grams (``n`` words each)."""

    n: int
    salt: bytes
    hashes: frozenset[bytes]

    def save(self, path: str | Path) -> None:
        from clinsent.io import write_json

        write_json({"n": self.n, "salt": self.salt.hex(), "hashes": sorted(h.hex() for h in self.hashes)}, path)

    @classmethod
    def load(cls, path: str | Path) -> Sample:
        import json

        data = json.loads(Path(path).read_text())
        return cls(int(data["n"]), bytes.fromhex(data["salt"]), frozenset(bytes.fromhex(h) for h in data["hashes"]))


def sample_ngrams(
    texts: Iterable[str],
    n: int,
    size: int,
    seed: int,
    notes: int = 500,
    min_letters: int = 20,
    max_share: float = 0.05,
) -> Sample:
    """``size`` n-grams of ``notes`` notes drawn over the stream (a reservoir: one pass, bounded
    memory), boilerplate left out: n-grams with fewer than ``min_letters`` letters, or found in
    more than ``max_share`` of the drawn notes (when at least 20 are drawn)."""
    rng = np.random.default_rng(seed)
    salt = hashlib.blake2b(f"clinsent-phi-{seed}".encode(), digest_size=16).digest()
    drawn: list[str] = []
    for i, text in enumerate(texts):
        if len(drawn) < notes:
            drawn.append(text)
        elif (j := int(rng.integers(0, i + 1))) < notes:
            drawn[j] = text
    per_note: Counter[bytes] = Counter()
    for text in drawn:
        w = words(text)
        per_note.update(
            {_hash(w[i : i + n], salt) for i in range(len(w) - n + 1) if sum(map(len, w[i : i + n])) >= min_letters}
        )
    limit = max_share * len(drawn) if len(drawn) >= 20 else float("inf")
    pool = sorted(g for g, c in per_note.items() if c <= limit)
    picked: list[int] = (
        [int(k) for k in rng.choice(len(pool), size=min(size, len(pool)), replace=False)] if pool else []
    )
    return Sample(n, salt, frozenset(pool[k] for k in picked))


@dataclass(frozen=True)
class Leak:
    path: Path
    offset: int  # byte offset of the first word of the n-gram (in the decoded piece, when `inside`)
    inside: str = ""  # the packed piece it is in (gzip, base64 at byte n, pdf stream, png text chunk)

    def __str__(self) -> str:
        return f"{self.path}: {self.inside + ', ' if self.inside else ''}byte {self.offset}"


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


def file_leaks(path: Path, sample: Sample, data: bytes | None = None) -> Iterator[Leak]:
    """Leaks in the file's own text and in what it packs (:func:`_inner`); ``data``: its bytes,
    when already read."""
    data = path.read_bytes() if data is None else data
    yield from _text_leaks(path, _decode(data), sample, "")
    for where, inner in _inner(data):
        yield from _text_leaks(path, _decode(inner), sample, where)


def _text_leaks(path: Path, text: str, sample: Sample, where: str) -> Iterator[Leak]:
    spans = [(m.start(), m.group().lower()) for m in _WORD.finditer(text)]
    n = sample.n
    for i in range(len(spans) - n + 1):
        if _hash((w for _, w in spans[i : i + n]), sample.salt) in sample.hashes:
            yield Leak(path, len(text[: spans[i][0]].encode("utf-8", errors="replace")), where)


def shared_files(results: str | Path, extra: Iterable[str | Path] = ()) -> list[Path]:
    """The files of a run meant for sharing: the SHARED folders and files, the model folders and
    release copies (their cards) but the weights, and ``extra``."""
    root = Path(results)
    found: list[Path] = []
    for name in SHARED:
        p = root / name
        if p.is_file():
            found.append(p)
        elif p.is_dir():
            found += [f for f in sorted(p.rglob("*")) if f.is_file()]
    for models in ("models", "release"):  # trained models and their release copies: all but the weights
        if (root / models).is_dir():
            found += [f for f in sorted((root / models).rglob("*")) if f.is_file() and f.suffix.lower() not in WEIGHTS]
    found += [Path(p) for p in extra if Path(p).is_file()]
    return found


def scan(files: Iterable[Path], sample: Sample) -> list[Leak]:
    """Every file's first leak (one per file is enough to act on). A file whose bytes equal one
    already scanned (each trained model's copy of the tokenizer) is not read again: it takes
    that file's finding, at its offset."""
    leaks: list[Leak] = []
    seen: dict[bytes, Leak | None] = {}
    for f in files:
        data = f.read_bytes()
        digest = hashlib.sha256(data).digest()
        if digest not in seen:
            seen[digest] = next(file_leaks(f, sample, data), None)
        first = seen[digest]
        if first is not None:
            leaks.append(Leak(f, first.offset, first.inside))
    return leaks


class PhiLeak(RuntimeError):
    """Note text was found in a file meant for sharing."""


QUARANTINE = Path("phi", "quarantine")  # under `results`: owner-only, never shared
FAILED = Path("phi", "scan_failed.json")  # the record of the last failed scan, while it stands


def _unit(path: Path, root: Path) -> Path:
    """What a leak in ``path`` takes away: the file, or for a file of a trained model the run's
    whole folder (``models/<method>/<base>/<seed>``), so that the next run retrains it rather
    than keeping a model with a file missing."""
    absolute, top = Path(os.path.abspath(path)), Path(os.path.abspath(root))
    if absolute.is_relative_to(top / "models") and len(absolute.relative_to(top).parts) > 4:
        return top.joinpath(*absolute.relative_to(top).parts[:4])
    return absolute


def _place(path: Path, root: Path) -> Path:
    """Where ``path`` goes inside a quarantine folder: ``results/<rel>`` for a file of the run,
    ``workdir/<rel>`` for one under the working folder (Snakemake's logs, a report), else
    ``outside/<absolute path>``."""
    top, here = Path(os.path.abspath(root)), Path(os.getcwd())
    if path.is_relative_to(top):
        return Path("results", path.relative_to(top))
    if path.is_relative_to(here):
        return Path("workdir", path.relative_to(here))
    return Path("outside", *path.parts[1:])


def quarantine(leaks: list[Leak], results: str | Path, mode: int = 0o700) -> Path:
    """Move every flagged file (or model run folder, :func:`_unit`) into a new owner-only
    ``phi/quarantine/<UTC time>/`` folder, files 0600; record the failure in ``phi/scan_failed.json``
    (paths and offsets, never text). Returns the quarantine folder."""
    from clinsent.io import write_json

    root = Path(results)
    box = root / QUARANTINE / time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    for folder in (root / "phi", root / QUARANTINE, box):
        folder.mkdir(parents=True, exist_ok=True, mode=mode)
        os.chmod(folder, mode)
    moved: dict[Path, Path] = {}
    for leak in leaks:
        unit = _unit(leak.path, root)
        if unit in moved or not unit.exists():
            continue
        dest = box / _place(unit, root)
        dest.parent.mkdir(parents=True, exist_ok=True, mode=mode)
        shutil.move(str(unit), str(dest))
        moved[unit] = dest
    for f in box.rglob("*"):  # folders made on the way and the moved files: owner-only too
        os.chmod(f, mode if f.is_dir() else 0o600)
    record = root / FAILED
    write_json(
        {
            "quarantine": str(box),
            "leaks": [
                {
                    "file": str(leak.path),
                    "inside": leak.inside,
                    "byte": leak.offset,
                    "moved_to": str(moved.get(_unit(leak.path, root), "")),
                }
                for leak in leaks
            ],
        },
        record,
    )
    os.chmod(record, 0o600)
    return box


def refuse_report(results: str | Path, argv: Iterable[str]) -> None:
    """Stop ``snakemake --report`` while the last PHI scan of ``results`` stands failed: the
    report would embed every file it lists. (Each report file's ``phi_scan.json`` is also one
    of the report's own items, so a report of a run whose scan never passed cannot be built.)"""
    record = Path(results) / FAILED
    if any(a == "--report" or a.startswith("--report=") for a in argv) and record.exists():
        raise PhiLeak(
            f"{record}: the last PHI scan found note text in a file meant for sharing, so the report is "
            "not built. Fix: change what wrote it (see the moved files listed there), rerun the workflow "
            "until the scan passes (a passing scan removes this record), then build the report"
        )


def check_shared(
    results: str | Path,
    sample_path: str | Path,
    out: str | Path | None = None,
    extra: Iterable[str | Path] = (),
    log: Callable[[str], Any] = print,
    move: bool = True,
) -> list[Path]:
    """Scan the shared files of ``results`` (and ``extra``, and Snakemake's own logs in the working
    folder); on a leak move the flagged files into the quarantine (unless not ``move``) and raise
    :class:`PhiLeak` naming every leaking file and offset, else write the count to ``out`` and
    clear the record of an earlier failure."""
    from clinsent.io import write_json

    sample = Sample.load(sample_path)
    files = shared_files(results, [*extra, *sorted(Path(".snakemake", "log").glob("*.log"))])
    leaks = scan(files, sample)
    if leaks:
        where = "; ".join(str(leak) for leak in leaks[:20])
        moved = (
            f" They were moved into {quarantine(leaks, results)} (owner-only; "
            f"{Path(results) / FAILED} lists them), and `snakemake --report` refuses until a scan passes."
            if move
            else ""
        )
        raise PhiLeak(
            f"{where}: a run of {sample.n} words of note text is in {len(leaks)} file(s) meant for sharing."
            f"{moved} Fix: remove it from what writes that file (a table label, a caption, a log line) and "
            f"rerun; never share {'the moved files' if move else 'these files as they are'}"
        )
    (Path(results) / FAILED).unlink(missing_ok=True)
    log(f"no sampled note n-gram ({len(sample.hashes)} of {sample.n} words) in {len(files)} shared files")
    if out is not None:
        write_json(
            {"shared_files": len(files), "ngrams": len(sample.hashes), "ngram_words": sample.n, "leaks": 0}, out
        )
    return files


def main(argv: list[str] | None = None) -> int:
    """``python -m clinsent.phi RESULTS [FILE ...]``: scan a run's shared files and FILEs (e.g. the
    HTML report of ``snakemake --report``) with the run's n-gram sample."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m clinsent.phi", description=main.__doc__)
    parser.add_argument("results")
    parser.add_argument("files", nargs="*")
    parser.add_argument(
        "--keep",
        action="store_true",
        help="leave flagged files where they are (default: move them into RESULTS/phi/quarantine)",
    )
    args = parser.parse_args(argv)
    try:
        check_shared(args.results, Path(args.results) / "phi" / "ngrams.json", extra=args.files, move=not args.keep)
    except PhiLeak as exc:
        print(exc)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
