"""``config/schema.yaml``, generated from the declarations (:mod:`clinsent.config.sections`).

Snakemake's ``validate`` reads the schema at the door (:func:`clinsent.door.validate.prepare_config`)
and fills in its defaults, so the file is what the declarations say, written out: ``python -m
clinsent.generate.schema`` rewrites it, ``--check`` exits 1 when the file differs from what it would
write (a test runs it). Edit the declarations, never the file.
"""

from __future__ import annotations

import argparse
import functools
import sys
from pathlib import Path
from typing import Any

from clinsent.repository import SCHEMA

HEADER = (
    "# GENERATED from the declarations in src/clinsent/config/sections.py by\n"
    "# `python -m clinsent.generate.schema`: do not edit; change a declaration and rerun it.\n"
)


@functools.cache
def config_schema() -> dict[str, Any]:
    """The config's JSON schema: every section's declaration, defaults and bounds included."""
    from clinsent.config.declare import settings_schema
    from clinsent.config.sections import RunConfig

    body = settings_schema(RunConfig)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "description": "Configuration of the clinsent workflow (see config/README.md for every key).",
        **body,
    }


def render() -> str:
    """The schema file's text: the header, then the schema as YAML in declaration order."""
    import yaml

    text = yaml.safe_dump(config_schema(), sort_keys=False, allow_unicode=True, width=100, default_flow_style=False)
    return HEADER + text


def write_or_check(path: Path, text: str, check: bool, command: str) -> int:
    """Write a generated file, or with ``check`` exit 1 (naming ``command``, which rewrites it)
    when the file is not what would be written: the one way every generated file is kept true."""
    if check:
        if path.read_text(encoding="utf-8") != text:
            print(f"{path} is out of date: run {command}", file=sys.stderr)
            return 1
        return 0
    from clinsent.io.files import write_text

    write_text(text, path)  # atomic, through the guarded writer: never half a schema
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m clinsent.generate.schema", description=__doc__)
    parser.add_argument(
        "--check", action="store_true", help="exit 1 if config/schema.yaml differs from the declarations"
    )
    args = parser.parse_args(argv)
    return write_or_check(SCHEMA, render(), args.check, "python -m clinsent.generate.schema")


if __name__ == "__main__":
    raise SystemExit(main())
