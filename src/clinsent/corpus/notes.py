"""Read clinical notes in the MIMIC-III NOTEEVENTS.csv layout (plain or gzip).

The reader streams the CSV in blocks with pyarrow (TEXT is quoted and multi-line), keeps
only the configured categories, drops ISERROR=1 rows, and returns one row per note.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv

from clinsent.errors import InputError

REQUIRED = ("ROW_ID", "CATEGORY", "TEXT")
OPTIONAL = ("SUBJECT_ID", "HADM_ID", "DESCRIPTION", "ISERROR")
NOTE_COLUMNS = ["row_id", "subject_id", "hadm_id", "category", "description", "text"]


def read_noteevents(path: str | Path, categories: list[str] | None, drop_errors: bool = True,
                    block_size: int = 64 << 20) -> pd.DataFrame:
    """Notes as a DataFrame with columns ``NOTE_COLUMNS``, sorted by row_id."""
    path = Path(path)
    if not path.exists():
        raise InputError(path, "the notes file does not exist", "set `notes.path` in the config to your NOTEEVENTS.csv")
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rt", encoding="utf-8", errors="replace") as fh:
            header_line = fh.readline()
    except (OSError, EOFError) as exc:
        raise InputError(path, f"cannot read the notes file ({exc})", "check the file is a complete .csv or .csv.gz") from exc
    names = [c.strip().strip('"') for c in header_line.strip().split(",")] if header_line.strip() else []
    if not names:
        raise InputError(path, "the notes file is empty", "point `notes.path` at a NOTEEVENTS.csv with a header row")
    missing = [c for c in REQUIRED if c not in names]
    if missing:
        raise InputError(path, f"missing column(s) {', '.join(missing)} in the header {names}",
                         "use the MIMIC-III NOTEEVENTS.csv layout (ROW_ID, ..., CATEGORY, ..., ISERROR, TEXT)")
    include = [c for c in (*REQUIRED, *OPTIONAL) if c in names]
    reader = pacsv.open_csv(
        path,
        read_options=pacsv.ReadOptions(block_size=block_size),
        parse_options=pacsv.ParseOptions(newlines_in_values=True),
        convert_options=pacsv.ConvertOptions(column_types={c: pa.string() for c in include}, include_columns=include,
                                             strings_can_be_null=False),
    )
    wanted = set(categories) if categories else None
    parts: list[pd.DataFrame] = []
    try:
        batches = [batch.to_pandas() for batch in reader]
    except pa.ArrowInvalid as exc:
        raise InputError(path, f"cannot parse the notes CSV ({exc})",
                         "the file must be UTF-8 CSV with quoted multi-line TEXT; re-export or fix the rows named") from exc
    for df in batches:
        if wanted is not None:
            df = df[df["CATEGORY"].isin(wanted)]
        if drop_errors and "ISERROR" in df:
            df = df[df["ISERROR"].str.strip() != "1"]
        parts.append(df)
    df = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=include)
    bad = ~df["ROW_ID"].str.strip().str.fullmatch(r"\d+")
    if bad.any():
        raise InputError(path, f"ROW_ID is not an integer in {int(bad.sum())} row(s), first {df.loc[bad, 'ROW_ID'].iloc[0]!r}",
                         "check the file is NOTEEVENTS.csv and that TEXT fields are quoted")
    out = pd.DataFrame({
        "row_id": df["ROW_ID"].astype("int64"),
        "subject_id": pd.to_numeric(df.get("SUBJECT_ID"), errors="coerce").astype("Int64") if "SUBJECT_ID" in df else pd.NA,
        "hadm_id": pd.to_numeric(df.get("HADM_ID"), errors="coerce").astype("Int64") if "HADM_ID" in df else pd.NA,
        "category": df["CATEGORY"],
        "description": df["DESCRIPTION"] if "DESCRIPTION" in df else "",
        "text": df["TEXT"],
    }, columns=NOTE_COLUMNS)
    return out.sort_values("row_id", kind="stable").reset_index(drop=True)
