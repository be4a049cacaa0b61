"""What staleness by content costs (clinsent.safety.stamps, clinsent.runner.staleness): the first
content key of a raw input (its bytes read and hashed once), the stat check of every later run
(nothing read), and a touched file read again; beside them, in the same run, the plain reference:
``sha256sum`` of the same file (the system's own tool) and one ``os.stat``.

The file is generated (random bytes, ``--gb`` of them, default 1) and dropped from the page
cache where the machine allows (``posix_fadvise``), so the first key reads it from disk as a
first run does; the figure for a 4 GB MIMIC notes file is the measured rate scaled, and says so.
Figures go to ``bench/results/input_keys.{json,md}``.

Usage: python bench/bench_input_keys.py [--gb 1] [--folder /tmp] [--out bench/results]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from clinsent.safety.stamps import key_of

REPO = Path(__file__).resolve().parents[1]
MIMIC_GB = 4.0  # a MIMIC notes file's size, about (NOTEEVENTS.csv is 3.8 GB)


def _drop_cache(path: Path) -> bool:
    """Ask the kernel to forget the file's pages (so the next read comes from disk)."""
    try:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
        return True
    except (AttributeError, OSError):
        return False


def _timed(fn: object) -> tuple[float, object]:
    start = time.perf_counter()
    out = fn()  # type: ignore[operator]
    return time.perf_counter() - start, out


def measure(path: Path, size: int) -> dict[str, Any]:
    """The figures of one file of ``size`` random bytes written at ``path`` (removed after)."""
    with open(path, "wb") as fh:
        for _ in range(size >> 24):
            fh.write(os.urandom(1 << 24))
    try:
        cold = _drop_cache(path)
        first, keyed = _timed(lambda: key_of(path))
        record = keyed.record()  # type: ignore[attr-defined]
        stat_s = sorted(_timed(lambda: key_of(path, record))[0] for _ in range(100))[50]
        plain_stat = sorted(_timed(lambda: os.stat(path))[0] for _ in range(100))[50]
        os.utime(path)  # touched, unchanged
        touched, again = _timed(lambda: key_of(path, record))
        _drop_cache(path)
        system, _ = _timed(lambda: subprocess.run(["sha256sum", str(path)], capture_output=True, check=True))
    finally:
        path.unlink(missing_ok=True)
    gb = size / (1 << 30)
    return {
        "machine": platform.processor() or platform.machine(),
        "cores": os.cpu_count(),
        "file_gb": round(gb, 3),
        "page_cache_dropped": cold,
        "first_key_s": round(first, 3),
        "first_key_gb_per_s": round(gb / first, 3),
        "sha256sum_s": round(system, 3),
        "first_key_vs_sha256sum": round(first / system, 3),
        "stat_check_us": round(stat_s * 1e6, 1),
        "plain_stat_us": round(plain_stat * 1e6, 1),
        "touched_reread_s": round(touched, 3),
        "touched_same_key": again.key == keyed.key,  # type: ignore[attr-defined]
        "mimic_4gb_first_key_s_scaled": round(MIMIC_GB / (gb / first), 1),
    }


def report(result: dict[str, Any], gb_asked: float) -> list[str]:
    """The figures as the Markdown page ``input_keys.md``."""
    first, system, rate = result["first_key_s"], result["sha256sum_s"], result["first_key_gb_per_s"]
    stat_us, plain_us = result["stat_check_us"], result["plain_stat_us"]
    cold = ", read from disk (page cache dropped)" if result["page_cache_dropped"] else ""
    return [
        "# Content keys of raw inputs: what staleness by content costs",
        "",
        f"`python bench/bench_input_keys.py --gb {gb_asked:g}` on {result['cores']} cores; a "
        f"{result['file_gb']:.2f} GB file of random bytes{cold}.",
        "",
        "| step | seconds | against the plain reference |",
        "|---|---|---|",
        f"| first key (read and SHA-256 once) | {first:.2f} | {first / system:.2f}× `sha256sum` of the same file "
        f"({system:.2f} s) |",
        f"| every later run: the stat check | {stat_us:.0f} µs | {stat_us / plain_us:.1f}× one `os.stat` "
        f"({plain_us:.1f} µs) |",
        f"| a touched file, read again | {result['touched_reread_s']:.2f} | "
        f"the same key: {result['touched_same_key']} |",
        "",
        f"A 4 GB MIMIC notes file at this rate ({rate:.2f} GB/s): about {MIMIC_GB / rate:.0f} s for its first key "
        "(scaled from the file above, not measured on 4 GB); then a stat per run.",
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gb", type=float, default=1.0)
    ap.add_argument("--folder", default=tempfile.gettempdir())
    ap.add_argument("--out", default=str(REPO / "bench" / "results"))
    args = ap.parse_args()
    result = measure(Path(args.folder) / "clinsent-bench-input.bin", int(args.gb * (1 << 30)))
    out = Path(args.out)
    (out / "input_keys.json").write_text(json.dumps(result, indent=2) + "\n")
    lines = report(result, args.gb)
    (out / "input_keys.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
