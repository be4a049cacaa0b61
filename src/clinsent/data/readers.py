"""Readers of training data as distributed -> training rows (the ``training_rows`` rule).

A reader takes the validated ``training_data.<name>`` entry and returns the rows (a
DataFrame with named text columns) and a report of what it kept and skipped (counts only,
never text). Register a new one with ``@READERS.register("format_name")``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd

from clinsent.registry import Registry

Reader = Callable[[dict[str, Any]], tuple[pd.DataFrame, dict[str, Any]]]
READERS: Registry[Reader] = Registry("training-data format", "training_data.<name>.format")


def read_training_rows(name: str, entry: dict[str, Any]) -> tuple[pd.DataFrame, dict[str, Any]]:
    import clinsent.data.nli  # noqa: F401  (registers the built-in readers)

    reader = READERS.get(entry["format"], where=f"config: training_data.{name}.format")
    return reader(entry)


def entry_paths(entry: dict[str, Any]) -> list[str]:
    """``path`` as a list (one file, or several read one after another)."""
    path = entry["path"]
    return [path] if isinstance(path, str) else list(path)
