"""Regenerate the demo inputs in this folder (seeded; a rerun writes the same bytes).

Usage: python resources/demo/generate.py --out resources/demo
       [--mimic-iv DIR: the demo notes also in MIMIC-IV-Note's layout, DIR/note/{discharge,radiology}.csv.gz]
"""

from __future__ import annotations

import argparse
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent)
    parser.add_argument("--notes", type=int, default=320, help="number of discharge summaries")
    parser.add_argument("--mimic-iv", type=Path, help="also write the notes in MIMIC-IV-Note layout under this folder")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    notes = add_category_notes(generate_notes(args.notes))
    write_noteevents(args.out / "NOTEEVENTS.demo.csv", notes)
    if args.mimic_iv:
        write_mimic_iv_note(args.mimic_iv, notes)
    write_diagnoses(args.out / "DIAGNOSES_ICD.demo.csv", generate_diagnoses(notes))
    write_demo_obo(args.out / "efo.demo.obo")
    pairs = generate_pairs(260)
    write_sts_tsv(args.out / "clinical_sts.demo.select.tsv", pairs[:130])
    write_sts_tsv(args.out / "clinical_sts.demo.test.tsv", pairs[130:])
    write_nli_jsonl(args.out / "mednli.demo.train.jsonl", generate_nli(360))
    write_nli_jsonl(args.out / "mednli.demo.dev.jsonl", generate_nli(300, seed=43))
    write_nli_jsonl(args.out / "mednli.demo.test.jsonl", generate_nli(150, seed=47))
    write_nli_jsonl(args.out / "radnli.demo.dev.jsonl", generate_radnli(60))
    write_nli_jsonl(args.out / "snli.demo.train.jsonl", generate_snli(150))
    write_nli_jsonl(args.out / "multinli.demo.train.jsonl", generate_snli(150, seed=61, genres=True))
    write_rqe_xml(args.out / "rqe.demo.dev.xml", generate_rqe(150, seed=17))
    write_rqe_xml(args.out / "rqe.demo.test.xml", generate_rqe(150, seed=19))
    write_rqe_xml(args.out / "rqe.demo.train.xml", generate_rqe(300, seed=67))
    write_lines(args.out / "pubmed.demo.sentences.txt", generate_en_sentences(600))
    write_lines(args.out / "cmed.demo.sentences.txt", generate_zh_sentences(300))
    write_biosses_tsv(args.out / "biosses.demo.tsv", generate_biosses(100))
    write_intents_tsv(args.out / "cmedic.demo.tsv", generate_intents(200))
    write_jsonl(args.out / "cmedqq.demo.jsonl", generate_question_pairs(200))
    write_conll(args.out / "i2b2_2010.demo.train.conll", generate_ner(160, seed=71))
    write_conll(args.out / "i2b2_2010.demo.test.conll", generate_ner(100, seed=73, train=False))


if __name__ == "__main__":
    main()
