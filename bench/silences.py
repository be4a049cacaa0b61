"""The longest silence of each job of a finished run: the most seconds between two lines the
job's console showed, its start counted (issue 74: no job silent for more than about 15 s).

    python bench/silences.py [SNAKEMAKE_LOG] [--out FILE.md]

reads Snakemake's log of the run (default: the newest under ``.snakemake/log/``) for each job's
start, finish and log file, and each job's log for its lines' times (``clinsent.*`` lines, the
ones a job's console shows; libraries' lines stay in the log only). A job's silences: from its
start to its first line, between its lines, and from its last line to its finish; the start
includes the job's process start and imports, which the job cannot speak through. Names and
seconds only are printed.
"""

from __future__ import annotations

import argparse
import datetime as dt
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
STAMP = re.compile(r"^\[(\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4})\]$")
LINE = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) clinsent\.")


def jobs(log: Path) -> list[dict[str, object]]:
    """Each job of a Snakemake log: rule, log file, start and finish (by its jobid)."""
    found: dict[str, dict[str, object]] = {}
    stamp: dt.datetime | None = None
    current: dict[str, object] | None = None
    for line in log.read_text().splitlines():
        if m := STAMP.match(line.strip()):
            stamp = dt.datetime.strptime(m.group(1), "%a %b %d %H:%M:%S %Y")
            continue
        text = line.strip()
        if m := re.match(r"^(local)?rule (\w+):$", text):
            current = {"rule": m.group(2), "start": stamp}
        elif current is not None and text.startswith("log: "):
            current["log"] = text[5:].split(",")[0].strip()
        elif current is not None and text.startswith("jobid: "):
            found[text[7:]] = current
        elif m := re.match(r"^Finished jobid: (\d+)", text):
            if m.group(1) in found:
                found[m.group(1)]["end"] = stamp
    return [j for j in found.values() if "log" in j and "end" in j]


def longest(job: dict[str, object], root: Path) -> tuple[float, int]:
    """(the longest silence in seconds, the lines) of one job."""
    path = root / str(job["log"])
    times = [job["start"]]
    if path.is_file():
        for line in path.read_text(errors="replace").splitlines():
            if m := LINE.match(line):
                times.append(dt.datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f"))
    times.append(job["end"])
    gaps = [(b - a).total_seconds() for a, b in zip(times, times[1:], strict=False)]  # type: ignore[operator]
    return max(gaps, default=0.0), len(times) - 2


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("log", nargs="?", type=Path, default=None)
    ap.add_argument("--root", type=Path, default=REPO, help="the run's working folder")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    log = args.log or max((args.root / ".snakemake" / "log").glob("*.snakemake.log"))
    rows: dict[str, tuple[float, int, int]] = {}
    for job in jobs(log):
        silence, lines = longest(job, args.root)
        worst, most_lines, count = rows.get(str(job["rule"]), (0.0, 0, 0))
        rows[str(job["rule"])] = (max(worst, silence), max(most_lines, lines), count + 1)
    out = [
        f"# The longest silence of each job (`python bench/silences.py`, {log.name})",
        "",
        "Seconds between two lines a job's console showed, its start (process, imports) and finish counted;",
        "Snakemake's log stamps jobs to the second.",
        "",
        "| rule | jobs | longest silence s | lines (most) |",
        "|---|---:|---:|---:|",
        *(f"| {r} | {n} | {s:.0f} | {lines} |" for r, (s, lines, n) in sorted(rows.items(), key=lambda kv: -kv[1][0])),
    ]
    print("\n".join(out))
    if args.out:
        args.out.write_text("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
