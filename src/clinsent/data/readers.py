"""Readers of training data as distributed -> training rows (the ``training_rows`` rule).

A reader takes the validated ``training_data.<name>`` entry and returns the rows (a
DataFrame with named text columns) and a report of what it kept and skipped (counts only,
never text). Register a new one with ``@READERS.register("format_name", check=...)`` (its
check reads a file's header and first rows at dry run: :mod:`clinsent.io.reading`); the built-ins
(:mod:`clinsent.data.nli`) register when :mod:`clinsent.data.training_rows` is imported, which
reads an entry through the registry (this module imports no reader, so none imports it back).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pandas as pd

from clinsent.io.reading import Readers

Reader = Callable[[dict[str, Any]], tuple[pd.DataFrame, dict[str, Any]]]
READERS: Readers[Reader] = Readers("training_data", "training-data format", "training_data.<name>.format")


def entry_paths(path: str | Sequence[str]) -> list[str]:
    """An entry's ``path`` as a list (one file, or several read one after another)."""
    return [path] if isinstance(path, str) else list(path)
