"""Streaming ingest of the three note formats, stable sharding, and bad input."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from clinsent.corpus.notes import NotesSpec, ReadStats, iter_notes
from clinsent.corpus.shards import scatter_notes, shard_names
from clinsent.demo.note_layouts import write_noteevents
from clinsent.demo.notes import COLUMNS, generate_notes
from clinsent.errors import InputError

from testkit.readers import read_notes


def _row(row_id: int, category: str, text: str, iserror: str = "") -> dict[str, str]:
    base = dict.fromkeys(COLUMNS, "")
    base.update(ROW_ID=str(row_id), SUBJECT_ID="1", HADM_ID="2", CATEGORY=category, ISERROR=iserror, TEXT=text)
    return base


def _csv(tmp_path: Path, rows: list[dict[str, str]], name: str = "NOTEEVENTS.csv") -> Path:
    path = tmp_path / name
    write_noteevents(path, rows)
    return path


def test_read_stats_count_every_skip(tmp_path: Path) -> None:
    path = _csv(
        tmp_path,
        [
            _row(1, "Discharge summary", "First."),
            _row(2, "Radiology", "Film."),
            _row(3, "Discharge summary", "Flagged.", iserror="1"),
            _row(4, "Discharge summary", "  \n "),
        ],
    )
    stats = ReadStats()
    df = read_notes(NotesSpec(str(path)), stats)
    assert df["row_id"].tolist() == [1]
    assert df["note_id"].tolist() == ["1"]
    assert stats.as_dict() == {
        "notes_read": 4,
        "notes_kept": 1,
        "skipped_category": 1,
        "skipped_iserror": 1,
        "skipped_empty": 1,
        "decoded_with_replacement": 0,
        "chars_kept": 6,
    }


def test_non_utf8_bytes_are_replaced_and_counted(tmp_path: Path) -> None:
    path = _csv(
        tmp_path, [_row(1, "Discharge summary", "Fever of 38\u00b0C noted."), _row(2, "Discharge summary", "Fine.")]
    )
    raw = path.read_bytes().replace("38\u00b0C".encode(), b"38\xb0C")  # latin-1 degree sign
    path.write_bytes(raw)
    stats = ReadStats()
    df = read_notes(NotesSpec(str(path)), stats)
    assert df["text"].tolist() == ["Fever of 38\ufffdC noted.", "Fine."]
    assert stats.decoded_with_replacement == 1


def test_truncated_gzip_names_the_file_and_writes_no_shard(tmp_path: Path) -> None:
    rows = [_row(i, "Discharge summary", "Text of a note. " * 400) for i in range(1, 200)]
    path = _csv(tmp_path, rows)
    gz = tmp_path / "NOTEEVENTS.csv.gz"
    data = gzip.compress(path.read_bytes())
    gz.write_bytes(data[: len(data) // 2])
    outs = [tmp_path / "shards" / f"{s}.parquet" for s in shard_names(2)]
    with pytest.raises(InputError, match=r"NOTEEVENTS\.csv\.gz.*Fix: .*complete"):
        scatter_notes(iter_notes(NotesSpec(str(gz), block_mb=1)), outs)
    assert not any(p.exists() for p in outs)
    assert not list((tmp_path / "shards").glob(".*")), "no temporary file is left behind"


def test_note_larger_than_the_block_names_the_key(tmp_path: Path) -> None:
    big = "The patient was admitted with chest pain and shortness of breath.\n" * 50_000  # ~3.3 MB
    path = _csv(tmp_path, [_row(1, "Discharge summary", "Short."), _row(2, "Discharge summary", big)])
    with pytest.raises(InputError, match=r"notes\.block_mb"):
        read_notes(NotesSpec(str(path), block_mb=1))
    df = read_notes(NotesSpec(str(path), block_mb=8))
    assert df.loc[df["row_id"] == 2, "text"].item() == big


def test_txt_folder(tmp_path: Path) -> None:
    root = tmp_path / "notes"
    (root / "b").mkdir(parents=True)
    (root / "b" / "z.txt").write_text("Second note.")
    (root / "a.txt").write_text("First note.")
    (root / "empty.txt").write_text("")
    (root / "c.txt").write_bytes(b"Caf\xe9 note.")
    (root / "skip.md").write_text("not a note")
    stats = ReadStats()
    df = read_notes(NotesSpec(str(root), "txt_dir"), stats)
    assert df["note_id"].tolist() == ["a.txt", "b/z.txt", "c.txt"]
    assert df["row_id"].tolist() == [1, 2, 3]
    assert df["text"].tolist() == ["First note.", "Second note.", "Caf\ufffd note."]
    assert stats.skipped_empty == 1 and stats.decoded_with_replacement == 1


def test_parquet_with_integer_and_string_ids(tmp_path: Path) -> None:
    path = tmp_path / "notes.parquet"
    pq.write_table(pa.table({"doc": [30, 10], "body": ["Thirty.", "Ten."]}), path)
    df = read_notes(NotesSpec(str(path), "parquet", id_column="doc", text_column="body"))
    assert df["row_id"].tolist() == [10, 30] and df["text"].tolist() == ["Ten.", "Thirty."]
    pq.write_table(pa.table({"id": ["x-1", "x-2"], "text": ["One.", "Two."]}), path)
    df = read_notes(NotesSpec(str(path), "parquet"))
    assert df["row_id"].tolist() == [1, 2] and df["note_id"].tolist() == ["x-1", "x-2"]
    with pytest.raises(InputError, match=r"notes\.parquet: missing column\(s\) 'body'.*text_column"):
        read_notes(NotesSpec(str(path), "parquet", text_column="body"))


def test_scatter_is_stable_and_byte_identical(tmp_path: Path) -> None:
    path = _csv(tmp_path, generate_notes(40, seed=5))
    spec = NotesSpec(str(path), categories=None)
    outs_a = [tmp_path / "a" / f"{s}.parquet" for s in shard_names(3)]
    outs_b = [tmp_path / "b" / f"{s}.parquet" for s in shard_names(3)]
    counts = scatter_notes(iter_notes(spec), outs_a, buffer_bytes=4096)
    scatter_notes(iter_notes(spec), outs_b, buffer_bytes=4096)
    assert [a.read_bytes() == b.read_bytes() for a, b in zip(outs_a, outs_b, strict=True)] == [True] * 3
    every = read_notes(spec)
    assert sum(counts) == len(every)
    for i, out in enumerate(outs_a):
        shard = pd.read_parquet(out)
        assert (shard["row_id"] % 3 == i).all()
    gathered = pd.concat([pd.read_parquet(p) for p in outs_a]).sort_values("row_id").reset_index(drop=True)
    pd.testing.assert_frame_equal(gathered, every)


def test_repeated_note_ids_are_an_error_and_leave_nothing(tmp_path: Path) -> None:
    path = _csv(tmp_path, [_row(5, "Discharge summary", "One."), _row(5, "Discharge summary", "Two.")])
    outs = [tmp_path / "s" / f"{s}.parquet" for s in shard_names(2)]
    with pytest.raises(InputError, match="note id 5 occurs 2 times"):
        scatter_notes(iter_notes(NotesSpec(str(path))), outs, source=str(path))
    assert not any(p.exists() for p in outs)


def test_parquet_sink_streams_row_groups_and_aborts_cleanly(tmp_path: Path) -> None:
    from clinsent.io.files import ParquetSink

    schema = pa.schema([("x", pa.int64())])
    with ParquetSink(tmp_path / "out.parquet", schema, group_bytes=64) as sink:
        for i in range(5):
            sink.write(pa.table({"x": list(range(i * 10, i * 10 + 10))}))
    meta = pq.ParquetFile(tmp_path / "out.parquet").metadata
    assert meta.num_rows == 50 and meta.num_row_groups == 5
    with pytest.raises(RuntimeError), ParquetSink(tmp_path / "bad.parquet", schema) as sink:
        sink.write(pa.table({"x": [1]}))
        raise RuntimeError("a failure half way")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.parquet"]


SECRET = "Mr Zebulon Quartzfield"  # stands for note text: it must never appear in an error


def _bad_notes(tmp_path: Path, name: str, tail: str, rows: int = 3) -> Path:
    """A NOTEEVENTS.csv of `rows` good notes (each naming SECRET) followed by `tail` as written."""
    path = _csv(
        tmp_path,
        [_row(i, "Discharge summary", f"{SECRET} was seen, doing well.\nLine two.") for i in range(1, rows + 1)],
        name,
    )
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(tail)
    return path


@pytest.mark.parametrize(
    ("case", "tail", "message"),
    [
        # an interrupted copy: the last quoted TEXT never closes (pyarrow keeps the cut note as a row)
        (
            "cut_in_text",
            f'9,1,2,2100-01-01,,,"Discharge summary","Report",,,"{SECRET} was cut of',
            r"row 5 \(the header is row 1\): the file ends inside this row's quoted field.*Fix: .*truncated.*re-copy",
        ),
        # cut before TEXT: a last row with too few fields
        (
            "cut_in_fields",
            "9,1,2,2100-01-01,",
            r"row 5 \(the header is row 1\): 5 field\(s\) where the header has 11.*Fix: .*cut short, re-copy",
        ),
        # unquoted TEXT: commas split the note into extra fields (pyarrow's own error prints the row)
        (
            "unquoted_text",
            f'9,1,2,2100-01-01,,,"Discharge summary","Report",,,{SECRET}, seen, well\n',
            r"row 5 \(the header is row 1\): 13 field\(s\) where the header has 11.*Fix: quote every TEXT field",
        ),
        # shifted columns: ROW_ID holds text
        (
            "text_in_row_id",
            f'"{SECRET}",1,2,2100-01-01,,,"Discharge summary","Report",,,"x"\n',
            r"row 5 \(the header is row 1\): ROW_ID is not an integer",
        ),
    ],
    ids=["cut_in_text", "cut_in_fields", "unquoted_text", "text_in_row_id"],
)
def test_bad_notes_rows_name_file_and_row_never_the_text(tmp_path: Path, case: str, tail: str, message: str) -> None:
    path = _bad_notes(tmp_path, f"{case}.csv", tail)
    outs = [tmp_path / "shards" / f"{s}.parquet" for s in shard_names(2)]
    with pytest.raises(InputError) as err:
        scatter_notes(iter_notes(NotesSpec(str(path), block_mb=1)), outs, source=str(path))
    text = str(err.value)
    assert text.startswith(f"{path}, row "), text
    assert re.search(message, text), text
    # nothing of the note anywhere in the exception chain, and nothing written
    chain: BaseException | None = err.value
    while chain is not None:
        assert "Zebulon" not in str(chain) and "Quartz" not in str(chain)
        chain = chain.__cause__ or chain.__context__
    assert not any(p.exists() for p in outs)
    assert not list((tmp_path / "shards").glob(".*"))


def test_bad_row_in_a_later_block_is_numbered_from_the_header(tmp_path: Path) -> None:
    """Rows are numbered as CSV records (a multi-line note is one row), across read blocks."""
    rows = [_row(i, "Discharge summary", "A line of a note.\n" * 180) for i in range(1, 401)]  # ~1.3 MB: two blocks
    good = _csv(tmp_path, rows, "good.csv")
    stats = ReadStats()
    assert len(read_notes(NotesSpec(str(good), block_mb=1), stats)) == 400 and stats.notes_read == 400
    bad = _csv(tmp_path, rows, "bad.csv")
    with open(bad, "a", encoding="utf-8") as fh:
        fh.write("401,1,2")
    with pytest.raises(InputError, match=r"bad\.csv, row 402 \(the header is row 1\): 3 field\(s\)"):
        read_notes(NotesSpec(str(bad), block_mb=1))


@pytest.mark.parametrize("categories", [["Discharge summary"], ["Nursing"]])
def test_no_note_after_the_filter_stops_ingest_naming_file_and_categories(
    tmp_path: Path, categories: list[str]
) -> None:
    header_only = _csv(tmp_path, [], "header_only.csv")
    with pytest.raises(
        InputError,
        match=rf"header_only\.csv: 0 notes after the category filter \('{categories[0]}'\): "
        r"0 read.*Fix: .*notes\.categories",
    ):
        read_notes(NotesSpec(str(header_only), categories=tuple(categories)))
    other = _csv(tmp_path, [_row(1, "Radiology", "Film.")], "other.csv")
    with pytest.raises(
        InputError,
        match=rf"^config: notes\.categories\[0\]: '{categories[0]}' matches no note CATEGORY "
        r"of .*other\.csv \(1 values seen\)\. Fix: write the value exactly",
    ):
        read_notes(NotesSpec(str(other), categories=tuple(categories)))


def test_a_category_the_notes_lack_stops_ingest_with_the_closest_one_spaces_shown(tmp_path: Path) -> None:
    """MIMIC-III writes 'Physician ' with a trailing space: 'Physician' in the config would drop
    the class silently; the ingest stops naming the index and showing the space. A typo gets the
    closest category. The counts of every category read are kept (ingest.json)."""
    rows = [_row(1, "Physician ", "Seen."), _row(2, "Radiology", "Film."), _row(3, "Radiology", "Film.")]
    path = _csv(tmp_path, rows, "notes.csv")
    with pytest.raises(InputError) as err:
        read_notes(NotesSpec(str(path), categories=("Radiology", "Physician")))
    assert str(err.value).startswith(
        f"config: notes.categories[1]: 'Physician' matches no note CATEGORY of {path} "
        "(2 values seen; the closest is 'Physician ' (1 row, it differs only "
        "in spaces)). Fix: write the value exactly as in the data (spaces included)"
    )
    with pytest.raises(InputError, match=r"categories\[0\]: 'Radiologyy' .*the closest is 'Radiology' \(2 rows"):
        read_notes(NotesSpec(str(path), categories=("Radiologyy",)))
    stats = ReadStats()
    assert len(read_notes(NotesSpec(str(path), categories=("Radiology", "Physician ")), stats)) == 3
    assert stats.categories == {"Physician ": 1, "Radiology": 2}
