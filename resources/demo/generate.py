"""Regenerate the demo inputs in this folder (seeded; a rerun writes the same bytes).

Usage: python resources/demo/generate.py --out resources/demo
"""

from __future__ import annotations

import argparse
from pathlib import Path

from clinsent.demo.notes import generate_notes, write_noteevents
from clinsent.demo.ontology import write_demo_obo
from clinsent.demo.sts import generate_pairs, write_sts_tsv


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent)
    parser.add_argument("--notes", type=int, default=320, help="number of discharge summaries")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    write_noteevents(args.out / "NOTEEVENTS.demo.csv", generate_notes(args.notes))
    write_demo_obo(args.out / "efo.demo.obo")
    pairs = generate_pairs(260)
    write_sts_tsv(args.out / "clinical_sts.demo.select.tsv", pairs[:130])
    write_sts_tsv(args.out / "clinical_sts.demo.test.tsv", pairs[130:])


if __name__ == "__main__":
    main()
