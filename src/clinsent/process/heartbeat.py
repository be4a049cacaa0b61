"""No silent job: a line at least every so many seconds while a job works (:class:`Heartbeat`).

A job's own progress lines come where it knows how far it is (shards, chunks, steps: with a rate
and an ETA, :mod:`.eta`); between them a step can run long without one (a model loading, a
library's own loop, an evaluation). The heartbeat watches the lines the console shows and, when
none came for ``every`` seconds, writes one itself: how long the job has run and how long since
its last line. A line is a whole line (newline-terminated and flushed by the logging handler),
never a ``\\r`` progress bar, so it shows when the output is a pipe or a cluster's log file.
It names no data: only the job's rule and seconds.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

HEARTBEAT = 15.0  # seconds: a command's (a job's: progress.heartbeat_seconds)


class Heartbeat(logging.Filter):
    """A daemon thread that says ``still working`` through ``say`` when ``every`` seconds passed
    without a line (0: never). The lines it counts: those a logging handler it filters passes (a
    job's console), or those said through :meth:`said` (a command's own ``log`` callable)."""

    def __init__(
        self,
        say: Callable[[str], object],
        every: float,
        what: str = "the job",
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__()
        self.say, self.every, self.what, self.clock = say, every, what, clock
        self.started = self.last = clock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="clinsent-heartbeat", daemon=True)

    def filter(self, record: logging.LogRecord) -> bool:
        self.last = self.clock()
        return True

    def said(self, line: str) -> None:
        """``say`` a line, counted as one."""
        self.last = self.clock()
        self.say(line)

    def _beat(self) -> None:
        while not self._stop.wait(min(self.every / 4, 1.0)):
            now = self.clock()
            if now - self.last >= self.every:
                self.said(
                    f"{self.what} is still working: {now - self.started:.0f} s since it started, "
                    f"{now - self.last:.0f} s since its last line"
                )

    def start(self) -> Heartbeat:
        if self.every > 0:
            self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
