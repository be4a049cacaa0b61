"""The demo notes (:mod:`clinsent.demo.notes`) written in MIMIC's layouts: MIMIC-III's
``NOTEEVENTS.csv`` (:func:`write_noteevents`) and MIMIC-IV-Note's ``note/discharge.csv.gz`` and
``note/radiology.csv.gz`` (:func:`write_mimic_iv_note`). DEMO DATA, for the demo and the readers'
tests (``notes.format: noteevents_csv`` and ``mimic_iv_note``)."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from clinsent.demo.notes import COLUMNS
from clinsent.io.files import atomic_path


def write_noteevents(path: Path, rows: list[dict[str, str]]) -> None:
    """Write rows as MIMIC-III writes NOTEEVENTS.csv: every field quoted, multi-line TEXT."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=COLUMNS, quoting=csv.QUOTE_ALL, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    with atomic_path(path, ".csv") as tmp:  # the guarded writer: never over an input, whole or absent
        tmp.write_text(buf.getvalue(), encoding="utf-8")


MIMIC_IV_COLUMNS = ["note_id", "subject_id", "hadm_id", "note_type", "note_seq", "charttime", "storetime", "text"]
# MIMIC-III category and description -> MIMIC-IV-Note's note type, and the file it is shipped in
_MIMIC_IV_TYPE = {
    ("Discharge summary", "Report"): ("DS", "discharge"),
    ("Discharge summary", "Addendum"): ("AD", "discharge"),
    ("Radiology", "Report"): ("RR", "radiology"),
    ("Radiology", "Addendum"): ("AR", "radiology"),
}


def write_mimic_iv_note(folder: Path, rows: list[dict[str, str]]) -> list[Path]:
    """The notes of ``rows`` that MIMIC-IV-Note has (discharge summaries and radiology reports, with
    their addenda; none marked ISERROR) in its layout: ``note/discharge.csv.gz`` and
    ``note/radiology.csv.gz`` under ``folder`` (note_id ``<subject>-<type>-<seq>``, the same texts),
    gzip-compressed with a fixed timestamp so the bytes are stable. DEMO DATA, for trying and
    testing ``notes.format: mimic_iv_note``. Returns the files written."""
    import gzip

    files: dict[str, list[list[str]]] = {"discharge": [], "radiology": []}
    seq: dict[tuple[str, str], int] = {}
    for r in rows:
        kind = _MIMIC_IV_TYPE.get((r["CATEGORY"], r["DESCRIPTION"]))
        if kind is None or r["ISERROR"].strip() == "1":
            continue
        code, file = kind
        seq[(r["SUBJECT_ID"], code)] = seq.get((r["SUBJECT_ID"], code), 0) + 1
        number = seq[(r["SUBJECT_ID"], code)]
        charttime = r["CHARTTIME"] or f"{r['CHARTDATE']} 00:00:00"
        files[file].append(
            [
                f"{r['SUBJECT_ID']}-{code}-{number}",
                r["SUBJECT_ID"],
                r["HADM_ID"],
                code,
                str(number),
                charttime,
                "",
                r["TEXT"],
            ]
        )
    out = []
    for file, records in files.items():
        buf = io.StringIO()
        writer = csv.writer(buf, quoting=csv.QUOTE_MINIMAL, lineterminator="\n")
        writer.writerow(MIMIC_IV_COLUMNS)
        writer.writerows(records)
        path = folder / "note" / f"{file}.csv.gz"
        with atomic_path(path, ".csv.gz") as tmp:  # the guarded writer: never over an input, whole or absent
            tmp.write_bytes(gzip.compress(buf.getvalue().encode("utf-8"), mtime=0))
        out.append(path)
    return out
