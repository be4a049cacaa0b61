"""Fetch a pinned ontology release (EFO's efo.obo) once, verify it, and store it atomically.

The URL, version and sha256 come from the config (``ontology.release``). The file is
streamed to a temporary name while its sha256 is computed; it is moved into place only when
the download is complete and, where a checksum is pinned, matches it. ``file://`` URLs work
too (a copy on shared storage).
"""

from __future__ import annotations

import base64
import hashlib
import logging
import netrc
import os
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
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


def resolve(url: str, environ: Mapping[str, str] = os.environ) -> tuple[str, str]:
    """(the URL to fetch, how messages name it): a ``$NAME`` (``ontology.release.url_env``) is read
    from the environment now and named only by its variable; any other URL is shown redacted."""
    if not url.startswith("$"):
        return url, redact_urls(url)
    name = url[1:]
    value = environ.get(name, "").strip()
    if not value:
        raise InputError(
            f"config: ontology.release.url_env: {name}",
            "the environment variable is not set (or empty) where the download runs",
            f"export {name}=<the release's URL> where Snakemake runs, or set ontology.path to a local copy",
        )
    return value, f"the URL in ${name}"


def request(url: str, rc: str | Path | None = None) -> urllib.request.Request:
    """The request for ``url``, with a login from the ``.netrc`` entry of its host where there is one
    (HTTP basic authentication: urllib does not read ``.netrc`` by itself); the credentials stay out
    of the URL, the config and every log."""
    req = urllib.request.Request(url)
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return req
    try:
        entry = netrc.netrc(str(rc) if rc else None).authenticators(parts.hostname)
    except (FileNotFoundError, netrc.NetrcParseError, OSError):
        return req
    if entry is not None and entry[2] is not None:
        token = base64.b64encode(f"{entry[0]}:{entry[2]}".encode()).decode()
        req.add_header("Authorization", f"Basic {token}")
    return req


def download_release(url: str, dest: str | Path, sha256: str | None, timeout: float = 60.0) -> str:
    """Download ``url`` (or the URL a ``$NAME`` holds: :func:`resolve`) to ``dest``; returns the
    file's sha256. Nothing is left at ``dest`` on failure; no message names the URL's secrets."""
    url, label = resolve(url)
    h = hashlib.sha256()
    size = 0
    with atomic_path(dest) as tmp:
        try:
            with urllib.request.urlopen(request(url), timeout=timeout) as resp, open(tmp, "wb") as out:  # noqa: S310
                for chunk in iter(lambda: resp.read(1 << 20), b""):
                    out.write(chunk)
                    h.update(chunk)
                    size += len(chunk)
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise InputError(
                label,
                f"download failed ({_why(exc)})",
                "check the URL and the network, or download the file elsewhere and set `ontology.path` to it",
            ) from None  # the library's own message and frames may repeat the URL whole
        digest = h.hexdigest()
        if sha256 and digest != sha256.lower():
            raise InputError(
                label,
                f"sha256 {digest} does not match the pinned `ontology.release.sha256` {sha256}",
                "the release changed or the download is corrupt: check the version, then re-pin",
            )
    shown = label  # its user information and query string (or, from url_env, all of it) never reach a log
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
