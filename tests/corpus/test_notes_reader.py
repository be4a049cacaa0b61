"""Reading NOTEEVENTS: multi-line TEXT, filters, gzip, and clear errors for bad files."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from clinsent.demo.note_layouts import write_noteevents
from clinsent.demo.notes import COLUMNS
from clinsent.errors import InputError

from testkit.readers import read_noteevents


def _row(row_id: int, category: str, text: str, iserror: str = "") -> dict[str, str]:
    base = dict.fromkeys(COLUMNS, "")
    base.update(ROW_ID=str(row_id), SUBJECT_ID="1", HADM_ID="2", CATEGORY=category, ISERROR=iserror, TEXT=text)
    return base


@pytest.fixture()
def notes_csv(tmp_path: Path) -> Path:
    rows = [
        _row(3, "Discharge summary", 'Line one, "quoted".\nLine two\n\nPara two.'),
        _row(1, "Discharge summary", "First."),
        _row(2, "Radiology", "Chest film."),
        _row(4, "Discharge summary", "Flagged.", iserror="1"),
    ]
    path = tmp_path / "NOTEEVENTS.csv"
    write_noteevents(path, rows)
    return path


def test_filters_and_multiline_text(notes_csv: Path) -> None:
    df = read_noteevents(notes_csv, ["Discharge summary"])
    assert df["row_id"].tolist() == [1, 3]
    assert df.loc[df["row_id"] == 3, "text"].item() == 'Line one, "quoted".\nLine two\n\nPara two.'
    assert len(read_noteevents(notes_csv, None, drop_errors=False)) == 4


def test_gzip_is_read(notes_csv: Path, tmp_path: Path) -> None:
    gz = tmp_path / "NOTEEVENTS.csv.gz"
    gz.write_bytes(gzip.compress(notes_csv.read_bytes()))
    assert read_noteevents(gz, ["Discharge summary"])["row_id"].tolist() == [1, 3]


def test_missing_text_column_names_file_and_fix(tmp_path: Path) -> None:
    path = tmp_path / "bad.csv"
    path.write_text('"ROW_ID","CATEGORY"\n"1","Discharge summary"\n')
    with pytest.raises(InputError, match=r"bad\.csv.*TEXT.*Fix"):
        read_noteevents(path, None)


def test_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "empty.csv"
    path.write_text("")
    with pytest.raises(InputError, match="empty"):
        read_noteevents(path, None)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="does not exist"):
        read_noteevents(tmp_path / "nope.csv", None)
