"""Read one ``training_data.<name>`` entry through the reader its ``format`` names (the
``training_rows`` rule): the built-in readers are registered here by importing their modules."""

from __future__ import annotations

from typing import Any

import pandas as pd

from clinsent.data import nli  # noqa: F401  (registers the built-in readers)
from clinsent.data.readers import READERS


def read_training_rows(name: str, entry: dict[str, Any]) -> tuple[pd.DataFrame, dict[str, Any]]:
    reader = READERS.get(entry["format"], where=f"config: training_data.{name}.format")
    return reader(entry)
