"""Regenerate the demo inputs in this folder (seeded; a rerun writes the same bytes):
:func:`clinsent.demo.files.write_demo_files`.

Usage: python resources/demo/generate.py --out resources/demo
       [--mimic-iv DIR: the demo notes also in MIMIC-IV-Note's layout, DIR/note/{discharge,radiology}.csv.gz]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from clinsent.demo.files import NOTES, write_demo_files


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent)
    parser.add_argument("--notes", type=int, default=NOTES, help="number of discharge summaries")
    parser.add_argument("--mimic-iv", type=Path, help="also write the notes in MIMIC-IV-Note layout under this folder")
    args = parser.parse_args()
    write_demo_files(args.out, args.notes, args.mimic_iv)


if __name__ == "__main__":
    main()
