"""Helpers for the thin Snakemake scripts: logging to the rule's log file, and the config's plugins."""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any


def setup_logging(smk: Any) -> logging.Logger:
    """Send the package's log records (and warnings) to the rule's ``log[0]``, and import the
    config's ``plugins`` (methods and tasks registered outside the package)."""
    from clinsent.registry import load_plugins

    load_plugins((getattr(smk, "config", None) or {}).get("plugins"))
    log_path = Path(smk.log[0]) if len(smk.log) else None
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    if log_path is not None:
        log_path.parent.mkdir(parents=True, exist_ok=True)
        handlers.append(logging.FileHandler(log_path, mode="w"))
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s",
                        handlers=handlers, force=True)
    logging.captureWarnings(True)
    logger = logging.getLogger(f"clinsent.{smk.rule}")

    def _log_uncaught(exc_type: Any, exc: BaseException, tb: Any) -> None:
        logger.error("%s failed", smk.rule, exc_info=(exc_type, exc, tb))

    sys.excepthook = _log_uncaught
    return logger
