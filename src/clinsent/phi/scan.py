"""The scan: the files of a run meant for sharing (:func:`shared_files`) cut into the sample's
n-grams, their own text and what they pack; a sampled hash is a leak, reported by file, packed
piece and byte offset, never by its text (:func:`scan`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from clinsent.paths import (
    BENCHMARKS,
    CROSS_ENCODER,
    CURVES_FIGURE,
    FINETUNE,
    LOGS,
    METRICS,
    MODEL_DIR,
    RELEASE,
    RESULTS_TABLE,
    RUN_RECORD,
    SUMMARY,
    top,
)
from clinsent.phi.sample import _WORD, Sample, _hash
from clinsent.phi.unpack import _decode, _inner

# what a shared results folder may contain, and is scanned
SHARED = (
    *(top(t) for t in (RESULTS_TABLE, CURVES_FIGURE, RUN_RECORD)),
    *(LOGS, BENCHMARKS, SUMMARY),
    *(top(t) for t in (METRICS, FINETUNE, CROSS_ENCODER)),
)


# every file of the shared folders is scanned, and what it packs (gzip, base64 and data URIs, PDF
# streams, PNG text chunks); under models/ every file but the weights
WEIGHTS = {".safetensors", ".bin", ".pt", ".pth", ".ckpt", ".onnx", ".h5", ".msgpack"}


@dataclass(frozen=True)
class Leak:
    path: Path
    offset: int  # byte offset of the first word of the n-gram (in the decoded piece, when `inside`)
    inside: str = ""  # the packed piece it is in (gzip, base64 at byte n, pdf stream, png text chunk)

    def __str__(self) -> str:
        return f"{self.path}: {self.inside + ', ' if self.inside else ''}byte {self.offset}"


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
    for models in (top(MODEL_DIR), RELEASE):  # trained models and their release copies: all but the weights
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
