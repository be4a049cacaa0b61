"""Which config a results folder was reported for, so ``snakemake --report`` over another one refuses.

The ``report`` job writes ``<results>/stats/run.json`` (:data:`clinsent.paths.RUN_RECORD`): a
fingerprint of what the report describes (the job grid, every scored evaluation, the tables, the
figures and the title, as the plan derives them from the config) and the config files given.
``snakemake --report`` with a config whose fingerprint differs (another config, or a changed one whose run has not been
redone) stops with one line naming both and the fix, instead of a report that describes one
config over the results of another. The fingerprint is the ``report`` job's own param, so a
config change that alters what the report describes reruns it, and one that does not (a
comment, a progress setting) leaves both alone.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from clinsent.errors import InputError
from clinsent.paths import RUN_RECORD

RECORD = Path(RUN_RECORD)


def fingerprint(
    jobs: Sequence[Any], evaluations: Sequence[Any], tables: Mapping[str, Any], figures: Mapping[str, Any], title: str
) -> str:
    """A short hash of what a report describes: the trained jobs, every scored evaluation, the
    tables, the figures and the title (as the plan derives them from the config)."""
    described = {"jobs": jobs, "evaluations": evaluations, "tables": tables, "figures": figures, "title": title}
    blob = json.dumps(described, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def record(fingerprint_: str, configfiles: Sequence[str]) -> dict[str, Any]:
    """The content of ``stats/run.json``."""
    return {"fingerprint": fingerprint_, "configfiles": [str(c) for c in configfiles]}


def _asks_report(argv: Iterable[str]) -> bool:
    return any(a == "--report" or a.startswith("--report=") for a in argv)


def refuse_other_config(
    results: str | Path, fingerprint_: str, configfiles: Sequence[str], argv: Iterable[str]
) -> None:
    """Raise (before Snakemake builds the report) when ``argv`` asks for ``--report`` and the
    results folder was reported for another config, or holds no report yet."""
    if not _asks_report(argv):
        return
    path = Path(results) / RECORD
    given = " ".join(f"--configfile {c}" for c in configfiles) or "the default config/config.yaml"
    if not path.exists():
        raise InputError(
            str(path),
            "no run of this config has finished its report here",
            f"run `snakemake all {given}` first (or give the config the results came from)",
        )
    recorded = json.loads(path.read_text())
    if recorded.get("fingerprint") != fingerprint_:
        then = (
            " ".join(f"--configfile {c}" for c in recorded.get("configfiles") or [])
            or "the default config/config.yaml"
        )
        raise InputError(
            str(path),
            f"these results were reported for another config ({then}) than this one ({given})",
            f"build the report with `{then}`, or run `snakemake all {given}` first",
        )
