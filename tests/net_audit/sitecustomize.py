"""Loaded by every Python process of a test run whose PYTHONPATH starts here (Snakemake and each
job it starts): an audit hook that refuses any socket connection or name lookup and records it,
with its stack, in $CLINSENT_NET_AUDIT (a refused call may be caught by the library that made it,
so the record, not the exit code, is what the test reads)."""

import os
import sys
import traceback

_LOG = os.environ.get("CLINSENT_NET_AUDIT")
_EVENTS = {"socket.connect", "socket.getaddrinfo", "socket.gethostbyname", "socket.gethostbyaddr"}


def _refuse(event: str, args: tuple) -> None:
    if event in _EVENTS and _LOG:
        with open(_LOG, "a", encoding="utf-8") as fh:
            fh.write(f"pid {os.getpid()} {event} {args!r}\n{''.join(traceback.format_stack(limit=30))}\n")
        raise OSError(f"network access refused by the test's audit hook: {event}")


if _LOG:
    sys.addaudithook(_refuse)
