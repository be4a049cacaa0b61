"""Seeded demo NER files in the CoNLL-style layout i2b2 2010 concept files take after the usual
conversion (a token and its BIO tag per line, a blank line between sentences): problems,
tests and treatments in clinical sentences written by us.

DEMO DATA: the sentence frames and words are this project's; nothing comes from i2b2/n2c2.
"""

from __future__ import annotations

import random
from pathlib import Path

_PROBLEMS = ["chest pain", "shortness of breath", "atrial fibrillation", "pneumonia", "acute kidney injury",
             "congestive heart failure", "fever", "sepsis", "type 2 diabetes mellitus", "hypertension",
             "urinary tract infection", "anemia", "delirium", "cough"]
_TESTS = ["chest x-ray", "ct scan", "echocardiogram", "blood cultures", "troponin", "creatinine", "ekg",
          "urinalysis", "cbc", "mri of the brain"]
_TREATMENTS = ["aspirin", "metoprolol", "iv fluids", "vancomycin", "ceftriaxone", "insulin", "lasix",
               "heparin drip", "oxygen", "physical therapy"]
_FRAMES = [
    "the patient presented with {p} and was started on {t} .",
    "a {x} was obtained which showed {p} .",
    "he was treated with {t} for {p} .",
    "{x} was negative and {p} resolved after {t} .",
    "she denies {p} but reports {p2} .",
    "given concern for {p} , a {x} was ordered .",
    "continue {t} and repeat {x} in the morning .",
]


def _tagged(phrase: str, kind: str) -> list[tuple[str, str]]:
    words = phrase.split()
    return [(w, ("B-" if i == 0 else "I-") + kind) for i, w in enumerate(words)]


def generate_ner(n: int, seed: int) -> list[list[tuple[str, str]]]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        frame = rng.choice(_FRAMES)
        sentence: list[tuple[str, str]] = []
        for word in frame.split():
            if word in ("{p}", "{p2}"):
                sentence += _tagged(rng.choice(_PROBLEMS), "problem")
            elif word == "{x}":
                sentence += _tagged(rng.choice(_TESTS), "test")
            elif word == "{t}":
                sentence += _tagged(rng.choice(_TREATMENTS), "treatment")
            else:
                sentence.append((word, "O"))
        out.append(sentence)
    return out


def write_conll(path: Path, sentences: list[list[tuple[str, str]]]) -> None:
    path.write_text("".join("".join(f"{w} {t}\n" for w, t in s) + "\n" for s in sentences), encoding="utf-8")
