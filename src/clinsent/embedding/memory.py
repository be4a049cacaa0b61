"""This process's memory: its peak resident size (:func:`peak_rss_mb`, what a corpus embedding
reports), and freed memory given back to the system after each chunk: the C heap's
(:func:`release_heap`) and Arrow's buffers (:func:`release_arrow`)."""

from __future__ import annotations

import sys
from pathlib import Path


def release_heap() -> None:
    """Give freed heap memory back to the system after a chunk (glibc's ``malloc_trim``; nothing
    elsewhere). Measured on the torch path with MiniLM: the peak from 5,000 to 40,000 sentences
    grew 1.35 times without it and 1.13 times with it, at no measurable cost in speed. What it
    cannot give back is a heap pinned by live objects between freed blocks: the encoders' per-batch
    vectors did that until each batch was copied out at once
    (:func:`clinsent.embedding.corpus.encode_in_length_order`). The unquantized torch and ONNX
    Runtime paths still creep (a chunk's peak higher than the last's: ONNX Runtime f32 1.22 times
    its 10,000-sentence peak at a million, torch 1.30 times by 300,000); a fixed mmap threshold
    stops it at about 9 to 17% of their rate (``docs/embedding-corpus.md``), so it is not set here."""
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    if sys.platform.startswith("linux") and name:
        try:
            ctypes.CDLL(name).malloc_trim(0)
        except (OSError, AttributeError):  # a libc without it (musl)
            pass


def release_arrow() -> None:
    """Give Arrow's freed buffers back to the system: its allocator (mimalloc) keeps them
    otherwise, and a corpus embedding's chunks and join grew the peak by 50 to 100 MB from
    10,000 to 100,000 sentences."""
    import pyarrow as pa

    pa.default_memory_pool().release_unused()


def peak_rss_mb() -> float:
    """This process's peak resident size, MiB: Linux's ``VmHWM`` (the high-water mark of this
    program's own memory; ``ru_maxrss`` also carries the parent's from before ``exec``), else
    ``ru_maxrss``."""
    import resource

    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
