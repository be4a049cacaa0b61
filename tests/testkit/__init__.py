"""Helpers the tests share (a test module never imports another test module's functions): the
repository's folders here, the Snakemake runs in :mod:`testkit.workflow`, the losses' rows,
encoders and passes in :mod:`testkit.losses`."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "resources" / "demo"
