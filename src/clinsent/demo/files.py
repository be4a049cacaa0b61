"""Every demo input file, written from the seeded generators (a rerun writes the same bytes):
what ``resources/demo/generate.py`` writes into ``resources/demo`` and what
:mod:`clinsent.demo.recognise` compares a file said to be demo data with."""

from __future__ import annotations

from pathlib import Path

from clinsent.demo.augment import (
    generate_biosses,
    generate_en_sentences,
    generate_intents,
    generate_question_pairs,
    generate_zh_sentences,
    write_biosses_tsv,
    write_intents_tsv,
    write_jsonl,
    write_lines,
)
from clinsent.demo.documents import add_category_notes, generate_diagnoses, write_diagnoses
from clinsent.demo.ner import generate_ner, write_conll
from clinsent.demo.nli import generate_nli, generate_radnli, generate_snli, write_nli_jsonl
from clinsent.demo.note_layouts import write_mimic_iv_note, write_noteevents
from clinsent.demo.notes import generate_notes
from clinsent.demo.ontology import write_demo_obo
from clinsent.demo.rqe import generate_rqe, write_rqe_xml
from clinsent.demo.sts import generate_pairs, write_sts_tsv

NOTES = 320  # discharge summaries of the demo notes


def write_demo_files(out: Path, notes: int = NOTES, mimic_iv: Path | None = None) -> None:
    """The demo inputs into ``out`` (and the notes in MIMIC-IV-Note's layout under ``mimic_iv``)."""
    out.mkdir(parents=True, exist_ok=True)
    rows = add_category_notes(generate_notes(notes))
    write_noteevents(out / "NOTEEVENTS.demo.csv", rows)
    if mimic_iv:
        write_mimic_iv_note(mimic_iv, rows)
    write_diagnoses(out / "DIAGNOSES_ICD.demo.csv", generate_diagnoses(rows))
    write_demo_obo(out / "efo.demo.obo")
    pairs = generate_pairs(260)
    write_sts_tsv(out / "clinical_sts.demo.select.tsv", pairs[:130])
    write_sts_tsv(out / "clinical_sts.demo.test.tsv", pairs[130:])
    write_nli_jsonl(out / "mednli.demo.train.jsonl", generate_nli(360))
    write_nli_jsonl(out / "mednli.demo.dev.jsonl", generate_nli(300, seed=43))
    write_nli_jsonl(out / "mednli.demo.test.jsonl", generate_nli(150, seed=47))
    write_nli_jsonl(out / "radnli.demo.dev.jsonl", generate_radnli(60))
    write_nli_jsonl(out / "snli.demo.train.jsonl", generate_snli(150))
    write_nli_jsonl(out / "multinli.demo.train.jsonl", generate_snli(150, seed=61, genres=True))
    write_rqe_xml(out / "rqe.demo.dev.xml", generate_rqe(150, seed=17))
    write_rqe_xml(out / "rqe.demo.test.xml", generate_rqe(150, seed=19))
    write_rqe_xml(out / "rqe.demo.train.xml", generate_rqe(300, seed=67))
    write_lines(out / "pubmed.demo.sentences.txt", generate_en_sentences(600))
    write_lines(out / "cmed.demo.sentences.txt", generate_zh_sentences(300))
    write_biosses_tsv(out / "biosses.demo.tsv", generate_biosses(100))
    write_intents_tsv(out / "cmedic.demo.tsv", generate_intents(200))
    write_jsonl(out / "cmedqq.demo.jsonl", generate_question_pairs(200))
    write_conll(out / "i2b2_2010.demo.train.conll", generate_ner(160, seed=71))
    write_conll(out / "i2b2_2010.demo.test.conll", generate_ner(100, seed=73, train=False))
