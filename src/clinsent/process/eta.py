"""Progress lines for long jobs: counts, a rate and an ETA, at most one line per ``every`` seconds
(and a last one), so a MIMIC-scale shard is visible in its log without flooding it. Lines hold
numbers only, never text of the input."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def duration(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


class Progress:
    """``update(done, **counts)`` with cumulative counts; ``done`` is in ``unit`` out of ``total``.
    The rate is that of ``rate_of`` (a key of ``counts``, default ``done``) per second."""

    def __init__(
        self,
        what: str,
        total: int | None,
        log: Callable[[str], Any],
        unit: str = "notes",
        every: float = 30.0,
        rate_of: str | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.what, self.total, self.log, self.unit, self.every, self.rate_of = what, total, log, unit, every, rate_of
        self.clock = clock
        self.start = clock()
        self.last = self.start
        self.lines = 0

    def line(self, done: int, counts: dict[str, int]) -> str:
        elapsed = max(self.clock() - self.start, 1e-9)
        of = f"/{self.total}" if self.total is not None else ""
        pct = f" ({100 * done / self.total:.0f}%)" if self.total else ""
        extra = "".join(f", {v} {k}" for k, v in counts.items())
        rate_key = self.rate_of or self.unit
        rate = (counts.get(rate_key, done) if self.rate_of else done) / elapsed
        eta = f", ETA {duration((self.total - done) * elapsed / done)}" if self.total and done else ""
        speed = f"{rate:.1f} {rate_key}/s"
        return f"{self.what}: {done}{of} {self.unit}{pct}{extra}, {speed}, {duration(elapsed)} elapsed{eta}"

    def update(self, done: int, final: bool = False, **counts: int) -> None:
        now = self.clock()
        if final or now - self.last >= self.every:
            self.last = now
            self.lines += 1
            self.log(self.line(done, counts))
