"""This process's memory: its peak resident size (:func:`peak_rss_mb`, what a corpus embedding
reports), and freed memory given back to the system after each chunk: the C heap's
(:func:`release_heap`) and Arrow's buffers (:func:`release_arrow`)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any


def release_heap() -> None:
    """Give freed heap memory back to the system after a chunk (glibc's ``malloc_trim``; nothing
    elsewhere). Measured on the torch path with MiniLM: the peak from 5,000 to 40,000 sentences
    grew 1.35 times without it and 1.13 times with it, at no measurable cost in speed. What it
    cannot give back is a heap pinned by live objects between freed blocks: the encoders' per-batch
    vectors did that until each batch was copied out at once
    (:func:`clinsent.embedding.corpus.encode_in_length_order`). The torch path on a CPU still
    creeps (1.30 times its 10,000-sentence peak by 300,000 sentences, then level); a fixed mmap
    threshold stops it at about 18% of its rate (:func:`flat_heap`), so that is a choice,
    ``memory: flat``, not the default. ONNX Runtime keeps its intermediate buffers in its own
    arena (:class:`clinsent.embedding.onnx_backend.OnnxEncoder`), OpenVINO in its own, so neither
    needs it."""
    libc = _glibc()
    if libc is not None:
        try:
            libc.malloc_trim(0)
        except AttributeError:  # a libc without it (musl)
            pass


def _glibc() -> Any:
    """The C library where it may be glibc (Linux), else None."""
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    if not (sys.platform.startswith("linux") and name):
        return None
    try:
        return ctypes.CDLL(name)
    except OSError:
        return None


MMAP_THRESHOLD = 4 * 1024 * 1024  # bytes: blocks this large or larger are mapped on their own
M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter (malloc.h)


def flat_heap() -> bool:
    """Keep large blocks off the C heap for the rest of this process: glibc's ``mallopt`` with a
    fixed mmap threshold of 4 MiB (what ``MALLOC_MMAP_THRESHOLD_=4194304`` does from the
    environment). glibc otherwise raises the threshold to the largest block freed so far (up to
    32 MiB), so a model's activations and each batch's buffers come from the heap, where blocks
    still live between freed ones pin it: the torch path's peak grows chunk after chunk. Mapped
    apart, each is given back when freed. Measured in the job's process (MiniLM, 2 threads,
    ``bench/results/embed.md``): at a million sentences torch peaked at 775 MB, 1.10 times its
    10,000-sentence peak, where without it the peak had passed 1.2 times by 300,000; it cost
    about 18% of the rate on 10,000 sentences (17.5 and 18.7% in two rounds interleaved with the
    default's; a threshold of 8 MiB cost 11 to 14% and grew 1.10 times to 100,000, one of 16 MiB
    from a 2% gain to a 14% loss). True where it was set (Linux with glibc), else False."""
    libc = _glibc()
    try:
        return libc is not None and bool(libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD))
    except AttributeError:  # a libc without it (musl)
        return False


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
