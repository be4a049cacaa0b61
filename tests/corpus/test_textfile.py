"""One decoding policy for every text reader (clinsent.io.textfile): a UTF-8 BOM dropped, UTF-16
with a BOM decoded, UTF-16 without one and bytes that are not UTF-8 refused with the file, the
line and the byte's offset, never the text; CoNLL lines with whitespace inside a token refused."""

from __future__ import annotations

import codecs
import logging
from pathlib import Path

import pytest

from clinsent.corpus.sentences import read_sentence_corpus
from clinsent.errors import InputError
from clinsent.evaluation.conll import read_conll
from clinsent.evaluation.sts_data import read_table
from clinsent.io.textfile import text_lines

SENTINEL = "Zyxwv sentinel wording"


def _corpus(path: Path) -> list[str]:
    frame, _ = read_sentence_corpus("c", {"path": str(path)})
    return frame["text"].tolist()


def test_a_utf8_byte_order_mark_is_dropped_and_logged(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "bom.txt"
    path.write_bytes(codecs.BOM_UTF8 + b"First sentence.\nSecond one.\n")
    with caplog.at_level(logging.INFO, logger="clinsent.io.textfile"):
        assert _corpus(path) == ["First sentence.", "Second one."]  # no U+FEFF glued to the first
    assert "byte-order mark at the start was dropped" in caplog.text
    header = tmp_path / "bom.csv"
    header.write_bytes(codecs.BOM_UTF8 + b"sentence1,sentence2,score\na,b,1\n")
    assert read_table(header)[0] == ["sentence1", "sentence2", "score"]


def test_utf16_is_decoded_with_its_mark_and_refused_without(tmp_path: Path) -> None:
    text = "Qu\u00e9bec patient.\nAnother line.\n"
    marked = tmp_path / "marked.txt"
    marked.write_bytes(text.encode("utf-16"))  # with its BOM
    assert _corpus(marked) == ["Qu\u00e9bec patient.", "Another line."]
    bare = tmp_path / "bare.txt"
    bare.write_bytes((SENTINEL + "\n").encode("utf-16-le"))
    with pytest.raises(InputError) as error:
        _corpus(bare)
    assert str(error.value).startswith(f"{bare}:1: holds NUL bytes: UTF-16 or UTF-32 saved without a byte-order mark")
    assert "Zyxwv" not in str(error.value) and "Fix: save the file as UTF-8" in str(error.value)


def test_bytes_that_are_not_utf8_name_the_line_and_offset_never_the_text(tmp_path: Path) -> None:
    path = tmp_path / "tokens.conll"
    path.write_bytes(f"{SENTINEL.split()[0]} O\n".encode() + "caf\u00e9 B-problem\n".encode("latin-1"))
    with pytest.raises(InputError) as error:
        read_conll(path)
    message = str(error.value)
    assert message.startswith(f"{path}:2: byte 4 of the line is not UTF-8. Fix: save the file as UTF-8")
    assert "Zyxwv" not in message and "caf" not in message and error.value.__cause__ is None
    assert next(text_lines(tmp_path / "tokens.conll")) == "Zyxwv O\n"  # lines before the bad one pass


def test_a_conll_token_with_whitespace_inside_is_refused(tmp_path: Path) -> None:
    """Split on whitespace, 'left<TAB>half' would keep 'left' and drop 'half' silently."""
    path = tmp_path / "tab.conll"
    path.write_text("The O\nleft\thalf B-problem\nends O\n", encoding="utf-8")
    with pytest.raises(
        InputError,
        match=r"1 line\(s\) with another number of columns than the first token line's 2 "
        r"\(lines \[2\]\) \(a space or tab inside a token\)",
    ):
        read_conll(path)
    path.write_text("The O\nleft B-problem\nends O\n", encoding="utf-8")
    assert [s.tokens for s in read_conll(path)] == [["The", "left", "ends"]]


def test_null_or_empty_nli_texts_are_errors_naming_the_lines(tmp_path: Path) -> None:
    """sentence2: null would become the text "None" and empty premises would merge into one
    premise "": both stop the reader, naming the lines, never the texts."""
    import json

    from clinsent.data.nli import read_nli_jsonl, read_nli_tsv

    rows = [
        {"sentence1": SENTINEL, "sentence2": "fine", "gold_label": "entailment"},
        {"sentence1": SENTINEL, "sentence2": None, "gold_label": "entailment"},
        {"sentence1": "  ", "sentence2": SENTINEL, "gold_label": "contradiction"},
    ]
    path = tmp_path / "nli.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    with pytest.raises(InputError) as error:
        read_nli_jsonl(path, {"no_gold_label": 0})
    assert str(error.value).startswith(
        f"{path}:2: field(s) ['sentence2'] null, empty or not text (2 bad row(s), at lines 2, 3)"
    ) and "Zyxwv" not in str(error.value)
    tsv = tmp_path / "nli.tsv"
    tsv.write_text(
        f"premise\thypothesis\tlabel\n\t{SENTINEL}\tentailment\n{SENTINEL}\tx\ty\tneutral\n", encoding="utf-8"
    )
    with pytest.raises(InputError) as error:
        read_nli_tsv(tsv, {"no_gold_label": 0})
    assert str(error.value).startswith(
        f"{tsv}:2: the premise or the hypothesis is empty (2 bad row(s), at lines 2, 3)"
    )
    assert "Zyxwv" not in str(error.value)


@pytest.mark.parametrize(
    ("content", "first_line"),
    [
        (
            "text\tlabel\tsplit\na\t1\ttrain\nb\t0\ttrain\nc\t1\tdev\nd\t0\tTest\ne\t1\ttest\n",
            "probe.tsv:5: 1 row(s) have a split that is not one of ['train', 'dev', 'test'] (the values are not "
            "shown; 1 of "
            "them differ from one only in case)",
        ),
        (
            f"text1\ttext2\tlabel\tsplit\na\tb\t1\ttrain\n{SENTINEL}\tin\ttwo\t0\ttrain\n",
            "probe.tsv:3: 5 fields, the header has 4 (a tab inside a text?)",
        ),
    ],
)
def test_probe_rows_outside_the_splits_or_with_a_tab_in_a_text_are_errors(
    tmp_path: Path, content: str, first_line: str
) -> None:
    """A split 'Test' (not 'test') would be left out of every split; a tab inside a pair's text
    would shift the row's columns: each stops the reader, naming the row, never its text."""
    from clinsent.tasks.probe import Probe, ProbeSettings

    path = tmp_path / "probe.tsv"
    path.write_text(content, encoding="utf-8")
    inputs = "pair" if content.startswith("text1") else "single"
    with pytest.raises(InputError) as error:
        Probe("p", ProbeSettings(path=str(path), inputs=inputs)).read()
    assert str(error.value).startswith(f"{tmp_path}/{first_line}") and "Zyxwv" not in str(error.value)
