"""Every reader, one rule set (issue 75): every reader of the one index (clinsent.io.reading) is
run over the same set of bad files (one row's text holding a NUL character, a lone surrogate,
bytes that are not UTF-8, and, where the layout quotes or nests, a field that never closes),
each written in the reader's own layout from the same rows. Each is refused with an
InputError naming the file and the line or row, never the text. A reader added to the index
without a layout here fails ``test_every_reader_has_a_layout``."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from clinsent.errors import InputError

BAD = "@@BAD@@"  # where a bad file's bytes go, inside the second row's first text
SECRET = "Quxvaj Wozbek"  # a row's words: never in a message
ROWS = [  # premise, hypothesis, label: each premise with an entailment and a contradiction (NLI triplets)
    ["the patient denies chest pain", "no chest pain reported", "entailment"],
    ["the patient denies chest pain", "the patient has chest pain", "contradiction"],
    [f"{SECRET} {BAD} has a fever", "the patient is febrile", "entailment"],
    [f"{SECRET} {BAD} has a fever", "the patient is afebrile", "contradiction"],
    ["she was given aspirin", "a drug was given", "entailment"],
    ["she was given aspirin", "no drug was given", "contradiction"],
]
SPLITS = ["train", "train", "dev", "dev", "test", "test"]  # two rows of two classes in each (a probe's)
# readers whose documented policy for bytes that are not UTF-8 is to replace them, count the
# note and warn (the notes: MIMIC-III holds a few such bytes; refusing would drop the corpus)
LENIENT = {
    (("notes", f), v) for f in ("txt_dir", "noteevents_csv", "mimic_iv_note") for v in ("surrogate", "not utf-8")
}  # noqa: E501
# the bytes of each bad file, by the layout's kind of text: raw bytes in a text file, escapes in JSON
BYTES = {
    "nul": {"text": b"\x00", "json": b"\\u0000"},
    "surrogate": {"text": b"\xed\xa0\x80", "json": b"\\ud800"},  # a lone surrogate: not UTF-8 in a text file
    "not utf-8": {"text": b"\xff", "json": b"\xff"},
}


class Layout:
    """One reader's file layout: how the rows are written, whether text is JSON-escaped, how a
    field is left open (None: the layout has no quoting), and the call that reads the file."""

    def __init__(
        self,
        write: Callable[[Path, list[list[str]]], Path],
        read: Callable[[Path], Any],
        escaped: str = "text",
        unterminated: Callable[[str], str] | None = None,
        binary: bool = False,
    ) -> None:
        self.write, self.read, self.escaped = write, read, escaped
        self.unterminated, self.binary = unterminated, binary


def _text_file(name: str, render: Callable[[list[list[str]]], str]) -> Callable[[Path, list[list[str]]], Path]:
    def write(tmp: Path, rows: list[list[str]]) -> Path:
        path = tmp / name
        path.write_text(render(rows), encoding="utf-8")
        return path

    return write


def _tsv(header: list[str], rows: list[list[str]]) -> str:
    return "\t".join(header) + "\n" + "".join("\t".join(r) + "\n" for r in rows)


def _csv(header: list[str], rows: list[list[str]]) -> str:
    return ",".join(header) + "\n" + "".join(",".join(f'"{c}"' for c in r) + "\n" for r in rows)


def _jsonl(keys: list[str], rows: list[list[str]], extra: dict[str, Any] | None = None) -> str:
    return "".join(json.dumps({**dict(zip(keys, r, strict=False)), **(extra or {})}) + "\n" for r in rows)


def _first_bad(lines: list[str]) -> int:
    return next(i for i, line in enumerate(lines) if BAD in line)


def _open_quote(text: str) -> str:
    """A CSV whose row holding the bad text has its last quoted field never closed."""
    lines = text.splitlines(keepends=True)
    at = _first_bad(lines)
    head, _, tail = lines[at].rpartition('"')
    lines[at] = head + tail
    return "".join(lines)


def _cut_json(text: str) -> str:
    """A JSON-lines file whose first object holding the bad text is cut inside that string."""
    lines = text.splitlines(keepends=True)
    at = _first_bad(lines)
    lines[at] = lines[at].split(BAD)[0] + "\n"
    return "".join(lines)


def _sts_score(rows: list[list[str]]) -> list[list[str]]:
    return [[a, b, "3.5"] for a, b, _ in rows]


def _notes_csv(header: str, first: Callable[[int], str]) -> Callable[[Path, list[list[str]]], Path]:
    """A notes CSV: ``first(i)``, the fields of row i before its quoted text."""

    def write(tmp: Path, rows: list[list[str]]) -> Path:
        body = "".join(f'{first(i)},"{r[0]}. {r[1]}."\n' for i, r in enumerate(rows))
        path = tmp / f"{header.split(',')[0]}.csv"
        path.write_text(header + "\n" + body)
        return path

    return write


NOTEEVENTS = "ROW_ID,SUBJECT_ID,HADM_ID,CHARTDATE,CHARTTIME,STORETIME,CATEGORY,DESCRIPTION,CGID,ISERROR,TEXT"
MIMIC_IV = "note_id,subject_id,hadm_id,note_type,note_seq,charttime,storetime,text"


def _txt_dir(tmp: Path, rows: list[list[str]]) -> Path:
    folder = tmp / "notes"
    folder.mkdir()
    for i, r in enumerate(rows):
        (folder / f"{i:03d}.txt").write_text(f"{r[0]}. {r[1]}.\n")
    return folder


def _parquet(columns: list[str], key: Callable[[list[list[str]]], dict[str, list[Any]]] | None = None) -> Any:
    def write(tmp: Path, rows: list[list[str]]) -> Path:
        path = tmp / "file.parquet"
        data = key(rows) if key else {c: [r[i] for r in rows] for i, c in enumerate(columns)}
        pq.write_table(pa.table(data), path)
        return path

    return write


def _obo(rows: list[list[str]]) -> str:
    root = '[Term]\nid: EFO:0000408\nname: disease\ndef: "a disease" []\n\n'
    terms = "".join(
        f'[Term]\nid: EFO:{i + 1:07d}\nname: {r[1]}\ndef: "{r[0]}" []\nis_a: EFO:0000408\n\n'
        for i, r in enumerate(rows)
    )
    return "format-version: 1.2\ndata-version: test\n\n" + root + terms


def _open_def(text: str) -> str:
    return text.replace(' has a fever" []', " has a fever []", 1)


def _xml(rows: list[list[str]]) -> str:
    pairs = "".join(
        f'<pair pid="{i}" value="true"><chq>{a}</chq><faq>{b}</faq></pair>\n' for i, (a, b, _) in enumerate(rows)
    )
    return f'<?xml version="1.0" encoding="UTF-8"?>\n<pairs>\n{pairs}</pairs>\n'


def _probe_rows(rows: list[list[str]]) -> list[list[str]]:
    return [[r[0], str(i % 2), split] for i, (r, split) in enumerate(zip(rows, SPLITS, strict=True))]


def _table(name: str, render: Callable[[list[str], list[list[str]]], str], header: list[str], rows: Any = None) -> Any:
    """A text table of ``header`` (``rows``: the rows it holds, from the shared ones)."""
    return _text_file(name, lambda r: render(header, (rows or (lambda x: x))(r)))


def _reads() -> dict[tuple[str, str], Layout]:
    from clinsent.corpus.notes import NotesSpec
    from clinsent.corpus.sentences import read_sentence_corpus
    from clinsent.data.nli import NLI_FORMATS
    from clinsent.data.readers import READERS as TRAINING
    from clinsent.embedding.texts import chunks
    from clinsent.evaluation.probe_data import read_probe
    from clinsent.evaluation.sts_data import STS_FORMATS
    from clinsent.ontology.obo import ONTOLOGY_FORMATS
    from clinsent.tasks.probe import ProbeSettings
    from clinsent.tasks.rqe import RQE_FORMATS

    from testkit.readers import read_notes

    def notes(fmt: str) -> Callable[[Path], Any]:
        return lambda p: read_notes(NotesSpec(str(p), fmt, categories=None))

    def texts(column: str | None) -> Callable[[Path], Any]:
        return lambda p: list(chunks(p, 2, column))

    def sts(fmt: str) -> Callable[[Path], Any]:
        return lambda p: STS_FORMATS.get(fmt).read("s", p, None, None, None, 5.0)

    def probe(fmt: str) -> Callable[[Path], Any]:
        if fmt == "nli_jsonl":  # pairs, its three splits in three files (here one file thrice)
            return lambda p: read_probe(
                p, ProbeSettings(path=str(p), format=fmt, inputs="pair", dev_path=str(p), test_path=str(p))
            )
        return lambda p: read_probe(p, ProbeSettings(path=str(p), format=fmt))

    def nli(fmt: str, training: bool) -> Callable[[Path], Any]:
        if training:
            return lambda p: TRAINING.get(fmt)({"path": str(p), "format": fmt})
        return lambda p: NLI_FORMATS.get(fmt)(p, {"no_gold_label": 0})

    def rqe(fmt: str) -> Callable[[Path], Any]:
        return lambda p: RQE_FORMATS.get(fmt)(p)

    lines = _text_file("t.txt", lambda rows: "".join(r[0] + "\n" for r in rows))
    nli_jsonl = _table("nli.jsonl", _jsonl, ["sentence1", "sentence2", "gold_label"])
    nli_tsv = _table("nli.tsv", _tsv, ["premise", "hypothesis", "label"])
    sts_header = ["sentence1", "sentence2", "score"]
    return {
        ("notes", "noteevents_csv"): Layout(
            _notes_csv(NOTEEVENTS, lambda i: f"{i + 1},{i + 1},{i + 1},2150-01-01,,,Nursing,Report,,"),
            notes("noteevents_csv"),
            unterminated=_open_quote,
        ),
        ("notes", "mimic_iv_note"): Layout(
            _notes_csv(MIMIC_IV, lambda i: f"{i + 1}-DS-1,{i + 1},{i + 1},DS,1,2150-01-01 00:00:00,"),
            notes("mimic_iv_note"),
            unterminated=_open_quote,
        ),
        ("notes", "parquet"): Layout(
            _parquet([], lambda rows: {"id": list(range(len(rows))), "text": [f"{r[0]}. {r[1]}." for r in rows]}),
            notes("parquet"),
            binary=True,
        ),
        ("notes", "txt_dir"): Layout(_txt_dir, notes("txt_dir")),
        ("sentences", "text"): Layout(lines, lambda p: read_sentence_corpus("c", {"path": str(p), "format": "text"})),
        ("sentences", "parquet"): Layout(
            _parquet(["text"]), lambda p: read_sentence_corpus("c", {"path": str(p), "format": "parquet"}), binary=True
        ),
        ("texts", "text"): Layout(lines, texts(None)),
        ("texts", "csv"): Layout(
            _table("t.csv", _csv, ["text", "other", "x"]), texts("text"), unterminated=_open_quote
        ),
        ("texts", "tsv"): Layout(_table("t.tsv", _tsv, ["text", "other", "x"]), texts("text")),
        ("texts", "jsonl"): Layout(_table("t.jsonl", _jsonl, ["text", "other"]), texts("text"), "json", _cut_json),
        ("texts", "parquet"): Layout(_parquet(["text", "other", "x"]), texts("text"), binary=True),
        ("sts", "sts_tsv"): Layout(_table("s.tsv", _tsv, sts_header, _sts_score), sts("sts_tsv")),
        ("sts", "n2c2_sts"): Layout(
            _text_file("s.tsv", lambda r: "".join("\t".join(x) + "\n" for x in _sts_score(r))), sts("n2c2_sts")
        ),
        ("sts", "table"): Layout(
            _table("s.csv", _csv, sts_header, _sts_score), sts("table"), unterminated=_open_quote
        ),
        ("rqe", "rqe_tsv"): Layout(
            _table("r.tsv", _tsv, ["question1", "question2", "label"], lambda r: [[a, b, "true"] for a, b, _ in r]),
            rqe("rqe_tsv"),
        ),
        ("rqe", "mediqa_xml"): Layout(
            _text_file("r.xml", _xml), rqe("mediqa_xml"), unterminated=lambda t: t.replace("</chq>", "", 2)
        ),
        ("probe", "tsv"): Layout(_table("p.tsv", _tsv, ["text", "label", "split"], _probe_rows), probe("tsv")),
        ("probe", "jsonl"): Layout(
            _table("p.jsonl", _jsonl, ["text", "label", "split"], _probe_rows), probe("jsonl"), "json", _cut_json
        ),
        ("probe", "nli_jsonl"): Layout(nli_jsonl, probe("nli_jsonl"), "json", _cut_json),
        ("nli", "nli_jsonl"): Layout(nli_jsonl, nli("nli_jsonl", False), "json", _cut_json),
        ("nli", "nli_tsv"): Layout(nli_tsv, nli("nli_tsv", False)),
        ("training_data", "nli_jsonl"): Layout(nli_jsonl, nli("nli_jsonl", True), "json", _cut_json),
        ("training_data", "nli_tsv"): Layout(nli_tsv, nli("nli_tsv", True)),
        ("ontology", "obo"): Layout(
            _text_file("efo.obo", _obo), lambda p: ONTOLOGY_FORMATS.get("obo")(p), unterminated=_open_def
        ),
    }


def test_every_reader_has_a_layout() -> None:
    from clinsent.io.reading import every_reader

    assert {(kind, name) for kind, name, _ in every_reader()} == set(_reads())


def _bad_file(layout: Layout, tmp: Path, variant: str) -> Path | None:
    """The layout's file of the three rows with one bad text (None: not writable in this layout)."""
    if layout.binary:  # a parquet file: its cells are Arrow strings, valid UTF-8 by construction
        if variant != "nul":
            return None
        return layout.write(tmp, [[c.replace(BAD, "\x00") for c in r] for r in ROWS])
    path = layout.write(tmp, ROWS)
    files = sorted(path.glob("*")) if path.is_dir() else [path]
    for file in files:
        raw = file.read_bytes()
        if variant == "unterminated":
            raw = layout.unterminated(raw.decode()).encode() if layout.unterminated else b""  # type: ignore[misc]
        raw = raw.replace(BAD.encode(), BYTES.get(variant, {}).get(layout.escaped, b"ok"))
        file.write_bytes(raw)
    return path if variant != "unterminated" or layout.unterminated else None


CASES = [(k, v) for k in sorted(_reads()) for v in ("nul", "surrogate", "not utf-8", "unterminated")]


@pytest.mark.parametrize("case", CASES, ids=["/".join((*c[0], c[1])) for c in CASES])
def test_every_reader_refuses_a_row_that_is_not_text_naming_the_file_and_line(
    tmp_path: Path, case: tuple[tuple[str, str], str]
) -> None:
    reader, variant = case
    layout = _reads()[reader]
    (tmp_path / "good").mkdir()
    (tmp_path / "bad").mkdir()
    layout.read(layout.write(tmp_path / "good", [[c.replace(BAD, "") for c in r] for r in ROWS]))  # these rows read
    path = _bad_file(layout, tmp_path / "bad", variant)
    if path is None:
        pytest.skip(f"{variant} cannot be written in the {reader[1]} layout")
    if (reader, variant) in LENIENT:
        layout.read(path)  # replaced, counted and warned of (the reader's documented policy)
        return
    with pytest.raises(InputError) as err:
        layout.read(path)
    told = str(err.value)
    assert str(path) in told and re.search(r"(:\d+|row \d+|line \d+|note id \S+)", told), told
    assert SECRET.split()[0] not in told and "Fix: " in told, told


def test_an_ontology_term_id_is_given_and_once_naming_both_lines(tmp_path: Path) -> None:
    from clinsent.ontology.obo import ONTOLOGY_FORMATS

    good = _obo([[c.replace(BAD, "") for c in r] for r in ROWS])
    path = tmp_path / "efo.obo"
    path.write_text(good.replace("id: EFO:0000003", "id: EFO:0000001", 1))  # the third term repeats the first's id
    with pytest.raises(InputError) as err:
        ONTOLOGY_FORMATS.check("obo", path, {}, "ontology.path")  # the dry run's check
    lines = good.splitlines()
    first, again = lines.index("id: EFO:0000001") + 1, lines.index("id: EFO:0000003") + 1
    told = str(err.value)
    assert told.startswith(f"config: ontology.path: {path}:{again}: ") and f"at line {first}" in told
    path.write_text(good.replace("id: EFO:0000002", "id:", 1))
    with pytest.raises(InputError, match=r"efo.obo:\d+: the term's id is empty"):
        ONTOLOGY_FORMATS.get("obo")(path)


def test_an_empty_id_of_a_text_to_embed_is_refused_by_row(tmp_path: Path) -> None:
    from clinsent.embedding.texts import chunks

    path = tmp_path / "t.csv"
    path.write_text(f'note,text\n7,one text\n,"{SECRET}"\n')
    with pytest.raises(InputError) as err:
        list(chunks(path, 10, "text", "note"))
    assert str(err.value).startswith(f"{path}, row 1: the id (note) is empty") and SECRET not in str(err.value)


@pytest.mark.parametrize("fmt", ["nli_jsonl", "nli_tsv"])
def test_repeated_training_pairs_are_kept_and_counted(
    tmp_path: Path, fmt: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The NLI reader keeps a repeated pair (each makes its triplets, as before) and now counts it,
    in its log line and in the training rows' report; the line names rows, never text."""
    from clinsent.data.readers import READERS

    rows = [[c.replace(BAD, "") for c in r] for r in [*ROWS, ROWS[2]]]  # the third row again, at the end
    layout = _reads()[("training_data", fmt)]
    path = layout.write(tmp_path, rows)
    df, report = READERS.get(fmt)({"path": str(path), "format": fmt})
    assert report["repeated_pairs"] == 1 and report["pairs"] == 7 and len(df) == 4  # the repeat makes a triplet too
    warned = [r.getMessage() for r in caplog.records if "repeat an earlier row" in r.getMessage()]
    assert len(warned) == 1 and "1 row(s)" in warned[0] and SECRET not in warned[0] and "repeated_pairs" in warned[0]


def test_a_field_over_the_csv_modules_limit_names_its_file_and_line(tmp_path: Path) -> None:
    """Issue 83: a TSV field over 128 KiB raised the csv module's own error with no file or line.
    Each tab-separated eval reader now says where, in one line, without the field."""
    from clinsent.evaluation.probe_data import _tsv
    from clinsent.evaluation.sts_data import _rows
    from clinsent.tasks.rqe import read_rqe_tsv

    path = tmp_path / "set.tsv"
    path.write_text("a\tb\tc\n" + "x\ty\t1\n" + "q" * 200_000 + "\ty\t2\n")
    for read in (_rows, read_rqe_tsv, _tsv):
        with pytest.raises(InputError) as err:
            read(path)
        told = str(err.value)
        assert told.startswith(f"{path}:3: a field is too long") and "q" * 20 not in told and "\n" not in told
