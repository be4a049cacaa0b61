"""Where the repository is, found in one place: the files the package reads from it (the
Snakefile, the config schema, the config reference). Every module that needs one of them imports
it from here, so moving a module never changes what it finds."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # src/clinsent/repository.py -> the repository
SNAKEFILE = ROOT / "Snakefile"
CONFIG = ROOT / "config"
SCHEMA = CONFIG / "schema.yaml"
CONFIG_README = CONFIG / "README.md"
