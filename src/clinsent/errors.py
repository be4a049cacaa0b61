"""The one exception type for bad input: it names the file, the row or key, and the fix."""

from __future__ import annotations

from pathlib import Path


class InputError(ValueError):
    """Raised for bad user input. The message says where (file, row, key) and what to do."""

    def __init__(self, where: str | Path, problem: str, fix: str) -> None:
        self.where = str(where)
        self.problem = problem
        self.fix = fix
        super().__init__(f"{where}: {problem}. Fix: {fix}")
