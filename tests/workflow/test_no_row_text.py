"""No row text in any message, for every reader: each registered format (and each other reader
of user files) gets a bad row whose every field is a unique sentinel; the reader stops (or warns)
naming the file and the row or column, and no sentinel word appears in the exception, its whole
chain (causes and contexts, with the traceback) or any log record. A new format without a case
here fails `test_every_registered_format_has_a_case`."""

from __future__ import annotations

import json
import logging
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from clinsent.errors import InputError

# unique sentinel fields: any word of one showing up in a message is a leak
SENTINELS = [
    "Quxvaj Wozbek Tilmarq",
    "Kifrum Yaltez Drobnil",
    "Pobnix Gerwuz Hamtrel",
    "Zelquon Vardip Cromtek",
    "Julvest Omrazik Fendrup",
    "Wextral Bimquor Salvyne",
    "Yorvanth Glemtix Prudbal",
    "Dowquip Nestral Vyrmox",
    "Harzept Cluvion Tresmok",
    "Lomfrid Ushtavel Kroqwin",
    "Bexturn Fyldrow Mazquel",
]
WORDS = {w.lower() for s in SENTINELS for w in s.split()}
S = SENTINELS


def _write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    return path


# --- one case per reader: (registry, format) -> build the bad file, return the call that reads it


def _notes(fmt: str) -> Callable[[Path], Callable[[], Any]]:
    def build(tmp: Path) -> Callable[[], Any]:
        from clinsent.corpus.notes import NotesSpec

        from testkit.readers import read_notes

        if fmt == "noteevents_csv":  # every field a sentinel: ROW_ID is not an integer
            header = "ROW_ID,SUBJECT_ID,HADM_ID,CHARTDATE,CHARTTIME,STORETIME,CATEGORY,DESCRIPTION,CGID,ISERROR,TEXT"
            path = _write(tmp / "NOTEEVENTS.csv", header + "\n" + ",".join(f'"{s}"' for s in S[:11]) + "\n")
            return lambda: read_notes(NotesSpec(str(path), categories=None))
        if fmt == "mimic_iv_note":  # an unquoted text: its commas split the row into more fields
            header = "note_id,subject_id,hadm_id,note_type,note_seq,charttime,storetime,text"
            path = _write(tmp / "discharge.csv", header + "\n" + ",".join(S[:10]) + "\n")
            return lambda: read_notes(NotesSpec(str(path), "mimic_iv_note", categories=None))
        if fmt == "parquet":  # integer ids with a null: every other field a sentinel
            path = tmp / "notes.parquet"
            pq.write_table(pa.table({"id": pa.array([None], pa.int64()), "text": [S[0]], "cat": [S[1]]}), path)
            return lambda: read_notes(NotesSpec(str(path), "parquet", categories=None, category_column="cat"))
        # txt_dir: bytes that are not UTF-8 are replaced and the note counted, with a warning
        _write(tmp / "notes" / "a.txt", f"{S[0]} caf\xe9 {S[1]}".encode("latin-1"))
        return lambda: read_notes(NotesSpec(str(tmp / "notes"), "txt_dir", categories=None))

    return build


def _sentences(fmt: str) -> Callable[[Path], Callable[[], Any]]:
    def build(tmp: Path) -> Callable[[], Any]:
        from clinsent.corpus.sentences import read_sentence_corpus

        if fmt == "text":
            path = _write(tmp / "c.txt", f"{S[0]}\n".encode() + f"{S[1]} caf\xe9 {S[2]}\n".encode("latin-1"))
        else:  # a binary column whose second cell is not UTF-8
            path = tmp / "c.parquet"
            pq.write_table(
                pa.table({"text": pa.array([S[0].encode(), f"{S[1]} caf\xe9".encode("latin-1")], pa.binary())}), path
            )
        return lambda: read_sentence_corpus("c", {"path": str(path), "format": fmt})

    return build


def _sts(fmt: str) -> Callable[[Path], Callable[[], Any]]:
    def build(tmp: Path) -> Callable[[], Any]:
        from clinsent.evaluation.sts_data import STS_FORMATS

        if fmt == "table":  # a score that is not a number
            path = _write(
                tmp / "sts.csv",
                f"sentence1,sentence2,score,split\nok one,ok two,1.0,test\n{S[0]},{S[1]},{S[2]},test\n",
            )
            return lambda: STS_FORMATS.get(fmt).read("s", path, None, "test", None, 5.0)
        header = "sentence1\tsentence2\tscore\n" if fmt == "sts_tsv" else ""  # n2c2: no header line
        path = _write(tmp / "sts.tsv", f"{header}ok one\tok two\t1.0\n{S[0]}\t{S[1]}\t{S[2]}\n")
        return lambda: STS_FORMATS.get(fmt).read("s", path, None, None, None, 5.0)

    return build


def _rqe(fmt: str) -> Callable[[Path], Callable[[], Any]]:
    def build(tmp: Path) -> Callable[[], Any]:
        from clinsent.tasks.rqe import RQE_FORMATS

        if fmt == "mediqa_xml":
            path = _write(
                tmp / "rqe.xml",
                f'<?xml version="1.0"?><pairs><pair pid="{S[0]}" value="{S[1]}"><chq>{S[2]}</chq>'
                f"<faq>{S[3]}</faq></pair></pairs>",
            )
        else:
            path = _write(tmp / "rqe.tsv", f"question1\tquestion2\tlabel\n{S[0]}\t{S[1]}\t{S[2]}\n")
        return lambda: RQE_FORMATS.get(fmt)(path)

    return build


def _probe(fmt: str) -> Callable[[Path], Callable[[], Any]]:
    def build(tmp: Path) -> Callable[[], Any]:
        from clinsent.evaluation.probe_data import read_probe
        from clinsent.tasks.probe import ProbeSettings

        good = [("a b", "1", "train"), ("c d", "0", "train"), ("e f", "1", "dev"), ("g h", "0", "test")]
        if fmt == "tsv":
            path = _write(
                tmp / "p.tsv",
                "text\tlabel\tsplit\n" + "".join("\t".join(r) + "\n" for r in good) + f"{S[0]}\t{S[1]}\t{S[2]}\n",
            )
            return lambda: read_probe(path, ProbeSettings(path=str(path), format="tsv"))
        if fmt == "jsonl":
            rows = [
                *({"text": t, "label": lab, "split": sp} for t, lab, sp in good),
                {"text": S[0], "label": S[1], "split": S[2]},
            ]
            path = _write(tmp / "p.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
            return lambda: read_probe(path, ProbeSettings(path=str(path), format="jsonl"))
        files = [
            _write(tmp / f"{s}.jsonl", json.dumps({"sentence1": S[0], "sentence2": S[1], "gold_label": S[2]}) + "\n")
            for s in ("train", "dev", "test")
        ]
        settings = ProbeSettings(
            path=str(files[0]), format="nli_jsonl", inputs="pair", dev_path=str(files[1]), test_path=str(files[2])
        )
        return lambda: read_probe(files[0], settings)

    return build


def _nli(fmt: str, training: bool) -> Callable[[Path], Callable[[], Any]]:
    def build(tmp: Path) -> Callable[[], Any]:
        from clinsent.data.nli import NLI_FORMATS
        from clinsent.data.readers import READERS

        if fmt == "nli_jsonl":
            path = _write(
                tmp / "nli.jsonl", json.dumps({"sentence1": S[0], "sentence2": S[1], "gold_label": S[2]}) + "\n"
            )
        else:
            path = _write(tmp / "nli.tsv", f"premise\thypothesis\tlabel\n{S[0]}\t{S[1]}\t{S[2]}\n")
        if training:
            return lambda: READERS.get(fmt)({"path": str(path), "format": fmt})
        return lambda: NLI_FORMATS.get(fmt)(path, {"no_gold_label": 0})

    return build


def _texts(fmt: str) -> Callable[[Path], Callable[[], Any]]:
    """Texts to embed, through the reader's dry-run check (which reads as the job does)."""

    def build(tmp: Path) -> Callable[[], Any]:
        from clinsent.embedding.texts import READERS as TEXTS

        entry: dict[str, Any] = {"column": "text"}
        if fmt == "csv":  # no header line: its first row would be taken for the column names
            path = _write(tmp / "t.csv", f"1,{S[0]},{S[1]}\n2,{S[2]},{S[3]}\n")
        elif fmt == "tsv":  # a row with a field too many
            path = _write(tmp / "t.tsv", f"id\ttext\n1\tok\n2\t{S[0]}\t{S[1]}\n")
        elif fmt == "jsonl":  # a line that is not JSON
            path = _write(tmp / "t.jsonl", json.dumps({"text": "ok"}) + f"\n{{{S[0]}: {S[1]}}}\n")
        elif fmt == "parquet":  # no column text; the columns are sentences
            path = tmp / "t.parquet"
            pq.write_table(pa.table({S[0]: [S[1]], S[2]: [S[3]]}), path)
        else:  # a line that is not UTF-8
            path = _write(tmp / "t.txt", f"{S[0]}\n".encode() + f"{S[1]} caf\xe9\n".encode("latin-1"))
            entry = {}
        return lambda: TEXTS.check(fmt, path, entry, "corpus_embeddings.c.input")

    return build


def _ontology(tmp: Path) -> Callable[[], Any]:
    """An OBO file whose second term repeats the first's id and opens a def it never closes."""
    from clinsent.ontology.obo import ONTOLOGY_FORMATS

    path = _write(
        tmp / "efo.obo",
        f'[Term]\nid: EFO:1\nname: {S[0]}\ndef: "{S[1]}" []\n\n[Term]\nid: EFO:1\nname: {S[2]}\ndef: "{S[3]} []\n',
    )
    return lambda: ONTOLOGY_FORMATS.get("obo")(path)


def _conll(tmp: Path) -> Callable[[], Any]:
    from clinsent.evaluation.conll import read_conll

    path = _write(tmp / "ner.conll", f"{S[0].split()[0]} O\n{S[1].split()[0]} {S[2].split()[0]} B-problem\n")
    return lambda: read_conll(path)


def _labelled_docs(tmp: Path) -> Callable[[], Any]:
    """A CSV without its header line: its first row would be read as the column names."""
    from clinsent.tasks.labelled_docs import LabelledDocsSettings, read_labelled_docs

    path = _write(tmp / "docs.csv", f"{S[0]},{S[1]},{S[2]}\n{S[3]},{S[4]},{S[5]}\n")
    return lambda: read_labelled_docs(LabelledDocsSettings(path=str(path)))


def _diagnoses(tmp: Path) -> Callable[[], Any]:
    from clinsent.corpus.doc_tasks import primary_diagnoses

    path = _write(
        tmp / "DIAGNOSES_ICD.csv",
        f'ROW_ID,SUBJECT_ID,HADM_ID,SEQ_NUM,ICD9_CODE\n1,2,3,2,"{S[4]}"\n"{S[0]}","{S[1]}","{S[2]}",1,"{S[3]}"\n',
    )
    return lambda: primary_diagnoses(path)


CASES: dict[tuple[str, str], Callable[[Path], Callable[[], Any]]] = {
    **{("notes", f): _notes(f) for f in ("noteevents_csv", "mimic_iv_note", "parquet", "txt_dir")},
    **{("sentences", f): _sentences(f) for f in ("text", "parquet")},
    **{("texts", f): _texts(f) for f in ("text", "csv", "tsv", "jsonl", "parquet")},
    **{("sts", f): _sts(f) for f in ("sts_tsv", "n2c2_sts", "table")},
    **{("rqe", f): _rqe(f) for f in ("mediqa_xml", "rqe_tsv")},
    **{("probe", f): _probe(f) for f in ("tsv", "jsonl", "nli_jsonl")},
    **{("nli", f): _nli(f, training=False) for f in ("nli_jsonl", "nli_tsv")},
    **{("training_data", f): _nli(f, training=True) for f in ("nli_jsonl", "nli_tsv")},
    ("ontology", "obo"): _ontology,
    ("conll", "conll"): _conll,
    ("labelled documents", "csv"): _labelled_docs,
    ("diagnoses", "csv"): _diagnoses,
}


def test_every_registered_format_has_a_case() -> None:
    """Every reader of the one index (clinsent.io.reading) has a case here, and a dry-run check (or
    its kind is read in full at dry run)."""
    from clinsent.io.reading import READER_KINDS, every_reader

    readers = every_reader()
    assert {(kind, name) for kind, name, _ in readers} == {c for c in CASES if c[0] in READER_KINDS}
    assert [(kind, name) for kind, name, checked in readers if not checked] == []


def _chain(exc: BaseException) -> str:
    """The whole exception as Snakemake would print it: every cause and context, with the traceback."""
    return "".join(traceback.format_exception(exc))


@pytest.mark.parametrize("case", list(CASES), ids=["/".join(c) for c in CASES])
def test_a_bad_row_of_sentinels_reaches_no_message(
    tmp_path: Path, case: tuple[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    read = CASES[case](tmp_path)
    caplog.set_level(logging.DEBUG)
    told = ""
    try:
        read()
    except InputError as exc:
        told = _chain(exc)
        assert str(exc).startswith(str(tmp_path)) or str(exc).startswith("config: "), str(exc)
        assert "Fix: " in str(exc)
    warned = "\n".join(r.getMessage() for r in caplog.records)
    assert told or any(r.levelno >= logging.WARNING for r in caplog.records), "the bad row passed without a word"
    seen = {w for w in WORDS if w in (told + warned).lower()}
    assert not seen, f"row text in a message: {sorted(seen)}\n{told}\n{warned}"


def test_a_header_is_described_by_its_field_count_and_near_misses_only() -> None:
    """A header that lacks a column: its values are not shown (a file without a header line would
    show its first row), but a field that is a wanted name apart from case, spaces or `_`/`-` is."""
    from clinsent.io.textfile import header_lacks

    told = header_lacks(["Sentence_1", "sentence 2", S[0]], ["sentence1", "sentence2", "score"])
    assert told == (
        "the header line lacks ['sentence1', 'sentence2', 'score'] (3 field(s); the values are not shown, "
        "since a file without a header line would show a data row; near misses: 'Sentence_1' for "
        "'sentence1', 'sentence 2' for 'sentence2')"
    )
