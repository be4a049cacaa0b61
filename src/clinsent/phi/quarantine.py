"""After a failed scan: every flagged file moved into the owner-only ``phi/quarantine/<time>/``
and the failure recorded (:func:`quarantine`); ``snakemake --report`` refused while it stands
(:func:`refuse_report`); :func:`check_shared` and the command ``python -m clinsent.phi``.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from clinsent.paths import MODEL_DIR, PHI_FAILED, PHI_NGRAMS, PHI_QUARANTINE
from clinsent.phi.sample import Sample
from clinsent.phi.scan import Leak, scan, shared_files


class PhiLeak(RuntimeError):
    """Note text was found in a file meant for sharing."""


QUARANTINE = Path(PHI_QUARANTINE)  # under `results`: owner-only, never shared


FAILED = Path(PHI_FAILED)  # the record of the last failed scan, while it stands


def _unit(path: Path, root: Path) -> Path:
    """What a leak in ``path`` takes away: the file, or for a file of a trained model the run's
    whole folder (``models/<method>/<base>/<seed>``), so that the next run retrains it rather
    than keeping a model with a file missing."""
    absolute, top = Path(os.path.abspath(path)), Path(os.path.abspath(root))
    depth = len(Path(MODEL_DIR).parts)  # models/<method>/<base>/seed<k>
    if absolute.is_relative_to(top / Path(MODEL_DIR).parts[0]) and len(absolute.relative_to(top).parts) > depth:
        return top.joinpath(*absolute.relative_to(top).parts[:depth])
    return absolute


def _place(path: Path, root: Path) -> Path:
    """Where ``path`` goes inside a quarantine folder: ``results/<rel>`` for a file of the run,
    ``workdir/<rel>`` for one under the working folder (Snakemake's logs, a report), else
    ``outside/<absolute path>``."""
    top, here = Path(os.path.abspath(root)), Path(os.getcwd())
    if path.is_relative_to(top):
        return Path("results", path.relative_to(top))
    if path.is_relative_to(here):
        return Path("workdir", path.relative_to(here))
    return Path("outside", *path.parts[1:])


def quarantine(leaks: list[Leak], results: str | Path, mode: int = 0o700) -> Path:
    """Move every flagged file (or model run folder, :func:`_unit`) into a new owner-only
    ``phi/quarantine/<UTC time>/`` folder, files 0600; record the failure in ``phi/scan_failed.json``
    (paths and offsets, never text). Returns the quarantine folder."""
    from clinsent.io.files import write_json

    root = Path(results)
    box = root / QUARANTINE / time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    for folder in (root / QUARANTINE.parent, root / QUARANTINE, box):
        folder.mkdir(parents=True, exist_ok=True, mode=mode)
        os.chmod(folder, mode)
    moved: dict[Path, Path] = {}
    for leak in leaks:
        unit = _unit(leak.path, root)
        if unit in moved or not unit.exists():
            continue
        dest = box / _place(unit, root)
        dest.parent.mkdir(parents=True, exist_ok=True, mode=mode)
        shutil.move(str(unit), str(dest))
        moved[unit] = dest
    for f in box.rglob("*"):  # folders made on the way and the moved files: owner-only too
        os.chmod(f, mode if f.is_dir() else 0o600)
    record = root / FAILED
    write_json(
        {
            "quarantine": str(box),
            "leaks": [
                {
                    "file": str(leak.path),
                    "inside": leak.inside,
                    "byte": leak.offset,
                    "moved_to": str(moved.get(_unit(leak.path, root), "")),
                }
                for leak in leaks
            ],
        },
        record,
    )
    os.chmod(record, 0o600)
    return box


def refuse_report(results: str | Path, argv: Iterable[str]) -> None:
    """Stop ``snakemake --report`` while the last PHI scan of ``results`` stands failed: the
    report would embed every file it lists. (Each report file's ``phi_scan.json`` is also one
    of the report's own items, so a report of a run whose scan never passed cannot be built.)"""
    record = Path(results) / FAILED
    if any(a == "--report" or a.startswith("--report=") for a in argv) and record.exists():
        raise PhiLeak(
            f"{record}: the last PHI scan found note text in a file meant for sharing, so the report is "
            "not built. Fix: change what wrote it (see the moved files listed there), rerun the workflow "
            "until the scan passes (a passing scan removes this record), then build the report"
        )


def check_shared(
    results: str | Path,
    sample_path: str | Path,
    out: str | Path | None = None,
    extra: Iterable[str | Path] = (),
    log: Callable[[str], Any] = print,
    move: bool = True,
) -> list[Path]:
    """Scan the shared files of ``results`` (and ``extra``, and Snakemake's own logs in the working
    folder); on a leak move the flagged files into the quarantine (unless not ``move``) and raise
    :class:`PhiLeak` naming every leaking file and offset, else write the count to ``out`` and
    clear the record of an earlier failure."""
    from clinsent.io.files import write_json

    sample = Sample.load(sample_path)
    files = shared_files(results, [*extra, *sorted(Path(".snakemake", "log").glob("*.log"))])
    leaks = scan(files, sample)
    if leaks:
        where = "; ".join(str(leak) for leak in leaks[:20])
        moved = (
            f" They were moved into {quarantine(leaks, results)} (owner-only; "
            f"{Path(results) / FAILED} lists them), and `snakemake --report` refuses until a scan passes."
            if move
            else ""
        )
        raise PhiLeak(
            f"{where}: a run of {sample.n} words of note text is in {len(leaks)} file(s) meant for sharing."
            f"{moved} Fix: remove it from what writes that file (a table label, a caption, a log line) and "
            f"rerun; never share {'the moved files' if move else 'these files as they are'}"
        )
    (Path(results) / FAILED).unlink(missing_ok=True)
    log(f"no sampled note n-gram ({len(sample.hashes)} of {sample.n} words) in {len(files)} shared files")
    if out is not None:
        write_json(
            {"shared_files": len(files), "ngrams": len(sample.hashes), "ngram_words": sample.n, "leaks": 0}, out
        )
    return files


def main(argv: list[str] | None = None) -> int:
    """``python -m clinsent.phi RESULTS [FILE ...]``: scan a run's shared files and FILEs (e.g. the
    HTML report of ``snakemake --report``) with the run's n-gram sample."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m clinsent.phi", description=main.__doc__)
    parser.add_argument("results")
    parser.add_argument("files", nargs="*")
    parser.add_argument(
        "--keep",
        action="store_true",
        help="leave flagged files where they are (default: move them into RESULTS/phi/quarantine)",
    )
    args = parser.parse_args(argv)
    try:
        check_shared(args.results, Path(args.results) / PHI_NGRAMS, extra=args.files, move=not args.keep)
    except PhiLeak as exc:
        print(exc)
        return 1
    return 0
