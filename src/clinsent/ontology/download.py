"""Fetch a pinned ontology release (EFO's efo.obo) once, verify it, and store it atomically.

The URL, version and sha256 come from the config (``ontology.release``). The file is
streamed to a temporary name while its sha256 is computed; it is moved into place only when
the download is complete and, where a checksum is pinned, matches it. ``file://`` URLs work
too (a copy on shared storage).
"""

from __future__ import annotations

import hashlib
import logging
import os
import urllib.error
import urllib.request
from pathlib import Path

from clinsent.errors import InputError, redact_urls
from clinsent.io.files import atomic_path

log = logging.getLogger(__name__)


def release_url(template: str, version: str) -> str:
    return template.format(version=version)


def _why(exc: BaseException) -> str:
    """Why a download failed, in words that carry no part of the URL (a library's message may
    repeat it whole, its query string and user information too)."""
    if isinstance(exc, urllib.error.HTTPError):
        return f"HTTP {exc.code}"
    reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
    if isinstance(reason, OSError) and reason.errno:
        return os.strerror(reason.errno)
    return type(reason).__name__


def download_release(url: str, dest: str | Path, sha256: str | None, timeout: float = 60.0) -> str:
    """Download ``url`` to ``dest``; returns the file's sha256. Nothing is left at ``dest`` on failure."""
    h = hashlib.sha256()
    size = 0
    with atomic_path(dest) as tmp:
        try:
            with urllib.request.urlopen(url, timeout=timeout) as resp, open(tmp, "wb") as out:  # noqa: S310
                for chunk in iter(lambda: resp.read(1 << 20), b""):
                    out.write(chunk)
                    h.update(chunk)
                    size += len(chunk)
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise InputError(
                url,
                f"download failed ({_why(exc)})",
                "check the URL and the network, or download the file elsewhere and set `ontology.path` to it",
            ) from exc
        digest = h.hexdigest()
        if sha256 and digest != sha256.lower():
            raise InputError(
                url,
                f"sha256 {digest} does not match the pinned `ontology.release.sha256` {sha256}",
                "the release changed or the download is corrupt: check the version, then re-pin",
            )
    shown = redact_urls(url)  # its user information and query string never reach a log
    if not sha256:
        log.warning(
            "downloaded %s (%d bytes) without a pinned checksum; its sha256 is %s: pin it in "
            "`ontology.release.sha256`",
            shown,
            size,
            digest,
        )
    log.info("downloaded %s: %d bytes, sha256 %s", shown, size, digest)
    return digest
