"""Normalisation and sentence splitting on nasty MIMIC-style text."""

from __future__ import annotations

import pytest

from clinsent.corpus.normalize import NORM_VERSION, normalize_note, replace_placeholders, surrogate, unwrap_soft_breaks
from clinsent.corpus.split import SentenceSplitter, merge_fragments, split_notes

NOTE = (
    "History of Present Illness:\n"
    "The patient is a 67 year old man with CHF and DM2 who was seen at [**Hospital1\n"
    "18**] on [**2151-7-16**] by Dr. [**Known lastname 1234**] for worsening dyspnea over\n"
    "three days. He was started on metoprolol 25 mg p.o. b.i.d. for rate control and\n"
    "his symptoms improved over the next two days.\n"
    "\n"
    "Medications on Admission:\n"
    "1. Lisinopril 10 mg p.o. q.d.\n"
    "2. Aspirin 81 mg p.o. daily\n"
    "Brief Hospital Course:\n"
    "# CHF: Diuresed with furosemide with good effect and weight decreased by two kilograms.\n"
)


@pytest.fixture(scope="module")
def splitter() -> SentenceSplitter:
    return SentenceSplitter()


def test_surrogates_are_typed() -> None:
    assert surrogate("2151-7-16") == "DATE"
    assert surrogate("Known lastname 1234") == "NAME"
    assert surrogate("First Name4 (NamePattern1) 8881") == "NAME"
    assert surrogate("Hospital1 18") == "HOSPITAL"
    assert surrogate("Location (un) 86") == "LOCATION"
    assert surrogate("Telephone/Fax (1) 1234") == "PHONE"
    assert surrogate("MD Number(1) 1234") == "ID"


def test_placeholder_cut_by_a_wrap_is_replaced_whole() -> None:
    assert replace_placeholders("seen at [**Hospital1\n18**] today") == "seen at HOSPITAL today"
    assert "[**" not in normalize_note(NOTE) and "**]" not in normalize_note(NOTE)


def test_unwrap_keeps_length_headers_and_list_items() -> None:
    text = replace_placeholders(NOTE)
    out = unwrap_soft_breaks(text)
    assert len(out) == len(text)
    lines = out.split("\n")
    assert "History of Present Illness:" in lines
    assert "1. Lisinopril 10 mg p.o. q.d." in lines and "2. Aspirin 81 mg p.o. daily" in lines
    assert any(
        line.startswith("The patient is a 67 year old man") and line.endswith("next two days.") for line in lines
    )


def test_split_offsets_index_the_normalised_note(splitter: SentenceSplitter) -> None:
    norm, sents = splitter.split(NOTE)
    assert sents
    for s in sents:
        assert norm[s.start : s.end] == s.text
        assert s.text == s.text.strip()


def test_split_keeps_abbreviations_and_boundaries(splitter: SentenceSplitter) -> None:
    _, sents = splitter.split(NOTE)
    texts = [s.text for s in sents]
    assert not any(t in {"p.o.", "b.i.d.", "q.d.", "p.o. b.i.d."} for t in texts), texts
    assert not any(t[0].islower() for t in texts), texts
    assert (
        "He was started on metoprolol 25 mg p.o. b.i.d. for rate control and his symptoms improved over the next two "
        "days." in texts
    )
    assert any(
        t.startswith("The patient is a 67 year old man with CHF and DM2 who was seen at HOSPITAL on DATE by Dr. NAME")
        for t in texts
    )
    assert "History of Present Illness:" in texts and "Brief Hospital Course:" in texts
    assert "1. Lisinopril 10 mg p.o. q.d." in texts


def test_merge_fragments_rules() -> None:
    text = "Metoprolol 25 mg p.o. b.i.d. for rate control. He was seen by Dr. Smith today."
    pieces = ["Metoprolol 25 mg", "p.o.", "b.i.d. for rate control.", "He was seen by Dr.", "Smith today."]
    spans = []
    for piece in pieces:
        a = text.index(piece, spans[-1][1] if spans else 0)
        spans.append((a, a + len(piece)))
    merged = [text[a:b] for a, b in merge_fragments(spans, text)]
    assert merged == ["Metoprolol 25 mg p.o. b.i.d. for rate control.", "He was seen by Dr. Smith today."]


def test_split_notes_filter_and_ids(splitter: SentenceSplitter) -> None:
    import pandas as pd

    notes = pd.DataFrame(
        {"row_id": [7, 9], "text": [NOTE, "Short one.\n\nThis sentence has exactly ten words in it, you see."]}
    )
    df = split_notes(notes, splitter, min_words=10)
    assert set(df["row_id"]) == {7, 9}
    assert (df["sent_id"] == df["row_id"] * 1_000_000 + df["sent_idx"]).all()
    assert (df["kept"] == (df["n_words"] >= 10)).all()
    assert (df["norm_version"] == NORM_VERSION).all()
    row9 = df[df["row_id"] == 9]
    assert row9["text"].tolist() == ["Short one.", "This sentence has exactly ten words in it, you see."]
    assert row9["kept"].tolist() == [False, True]


def test_every_mimic_placeholder_kind_is_one_token_even_across_wraps() -> None:
    kinds = {
        "[**2151-7-16**]": "DATE",
        "[**7-16**]": "DATE",
        "[**2150**]": "DATE",
        "[**Known lastname 1234**]": "NAME",
        "[**First Name4 (NamePattern1) 8881**]": "NAME",
        "[**Hospital1 18**]": "HOSPITAL",
        "[**Location (un) 86**]": "LOCATION",
        "[**Telephone/Fax (1) 1234**]": "PHONE",
        "[**MD Number(1) 1234**]": "ID",
    }
    for placeholder, word in kinds.items():
        assert replace_placeholders(f"seen {placeholder} today") == f"seen {word} today"
        cut = placeholder.index(" ") if " " in placeholder else 5
        wrapped = placeholder[:cut] + "\n" + placeholder[cut + 1 :] if " " in placeholder else placeholder
        assert replace_placeholders(f"seen {wrapped} today") == f"seen {word} today", wrapped


def test_sentences_never_split_inside_a_placeholder(splitter: SentenceSplitter) -> None:
    note = (
        "Pt was transferred from [**Hospital1\n18**] on [**2151-7-16**] for management of CHF. "
        "Dr. [**First Name4 (NamePattern1) 8881**] [**Known lastname 1234**] was consulted and recommended "
        "continuing lasix 40 mg p.o. b.i.d. until follow up.\n"
    )
    _, sents = splitter.split(note)
    texts = [s.text for s in sents]
    assert texts == [
        "Pt was transferred from HOSPITAL on DATE for management of CHF.",
        "Dr. NAME NAME was consulted and recommended continuing lasix 40 mg p.o. b.i.d. until follow up.",
    ]


class _SpyNLP:
    """Records what the splitter feeds to the sentencizer, then delegates to the real one."""

    def __init__(self, nlp: object) -> None:
        self.nlp = nlp
        self.inputs: list[str] = []

    def __call__(self, text: str):  # type: ignore[no-untyped-def]
        self.inputs.append(text)
        return self.nlp(text)  # type: ignore[operator]


def test_pysbd_is_fed_one_unit_at_a_time(splitter: SentenceSplitter) -> None:
    spy = _SpyNLP(splitter.nlp)
    SentenceSplitter(spy).split(NOTE)
    assert "History of Present Illness:" in spy.inputs and "Medications on Admission:" in spy.inputs
    assert "1. Lisinopril 10 mg p.o. q.d." in spy.inputs
    assert not any("\n" in unit for unit in spy.inputs)


def test_an_overlong_line_is_cut_before_pysbd(splitter: SentenceSplitter) -> None:
    line = " ".join(f"Blood pressure reading number {i} was stable on the ward." for i in range(2000))  # ~115 kchar
    spy = _SpyNLP(splitter.nlp)
    norm, sents = SentenceSplitter(spy, max_unit_chars=2000).split(line)
    assert len(spy.inputs) > 50 and max(len(u) for u in spy.inputs) <= 2000
    assert len(sents) == 2000
    assert all(norm[s.start : s.end] == s.text and s.text.endswith("was stable on the ward.") for s in sents)


def test_split_shard_streams_to_the_same_table(splitter: SentenceSplitter, tmp_path) -> None:  # type: ignore[no-untyped-def]
    import pandas as pd

    from clinsent.corpus.split import split_shard
    from clinsent.demo.notes import generate_notes

    notes = pd.DataFrame([{"row_id": int(r["ROW_ID"]), "text": r["TEXT"]} for r in generate_notes(6, seed=11)])
    notes.to_parquet(tmp_path / "notes.parquet")
    lines: list[str] = []
    counts = split_shard(
        tmp_path / "notes.parquet",
        tmp_path / "sents.parquet",
        splitter,
        10,
        notes_per_batch=2,
        log=lines.append,
        every=0,
    )
    streamed = pd.read_parquet(tmp_path / "sents.parquet")
    whole = split_notes(notes, splitter, 10)
    pd.testing.assert_frame_equal(streamed, whole)
    assert counts == {"notes": len(notes), "sentences": len(whole), "kept": int(whole["kept"].sum())}
    # a progress line per batch here (every=0) and a last one: counts, a rate, an ETA; no note text
    assert len(lines) == 4 and lines[0].startswith("split notes.parquet: 2/6 notes (33%), ")
    assert lines[-1].startswith(f"split notes.parquet: 6/6 notes (100%), {len(whole)} sentences, ")
    assert all(" sentences/s, " in line and "ETA 0:00:00" in lines[-1] for line in lines)
    note_words = {w for text in notes["text"] for w in text.split() if len(w) > 3 and w.isalpha()}
    assert not any(w in line.split() for line in lines for w in note_words)
