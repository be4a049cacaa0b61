"""Seeded demo NER files in the CoNLL-style layout i2b2 2010 concept files take after the usual
conversion (a token and its BIO tag per line, a blank line between sentences): problems,
tests and treatments in clinical sentences written by us.

What makes them hard enough that a fine-tuned encoder does not reach F1 1.0 (issue 28):

- **unseen entities**: a quarter of each entity list (every fourth item) is left out of the
  training file, so the test file has problems, tests and treatments the tagger never saw;
- **the same word, two types**: potassium, insulin, heparin, oxygen, ... are a treatment when
  given ("started on heparin") and a test when measured ("a heparin level");
- **modifiers and lists**: "worsening", "acute on chronic", "iv"; several entities in a row;
  entities at the start, middle and end of sentences of varied length;
- **annotation noise**, as between human annotators: 6% of entities lose their modifier from the
  span and 3% are not tagged at all.

DEMO DATA: the sentence frames and words are this project's; nothing comes from i2b2/n2c2.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path

from clinsent.demo.vocabulary import load_terms
from clinsent.io.files import write_text

_SYMPTOMS = [
    "chest pain",
    "shortness of breath",
    "fever",
    "cough",
    "nausea",
    "vomiting",
    "abdominal pain",
    "headache",
    "dizziness",
    "fatigue",
    "lower extremity edema",
    "confusion",
    "palpitations",
    "syncope",
    "weight loss",
    "diarrhea",
    "dysuria",
    "hematuria",
    "back pain",
    "rash",
]
_TESTS = [
    "chest x-ray",
    "ct scan",
    "echocardiogram",
    "blood cultures",
    "troponin",
    "creatinine",
    "ekg",
    "urinalysis",
    "cbc",
    "mri of the brain",
    "lactate",
    "inr",
    "bnp",
    "liver function tests",
    "abg",
    "ct angiogram",
    "renal ultrasound",
    "stress test",
    "lipase",
    "hemoglobin a1c",
    "tsh",
    "eeg",
    "lumbar puncture",
    "colonoscopy",
    "bronchoscopy",
    "sputum culture",
    "d-dimer",
    "ammonia level",
]
_TREATMENTS = [
    "aspirin",
    "metoprolol",
    "iv fluids",
    "vancomycin",
    "ceftriaxone",
    "lasix",
    "lisinopril",
    "physical therapy",
    "atorvastatin",
    "prednisone",
    "albuterol nebulizers",
    "piperacillin-tazobactam",
    "amiodarone",
    "diltiazem",
    "levetiracetam",
    "lactulose",
    "pantoprazole",
    "morphine",
    "packed red blood cells",
    "warfarin",
    "nitroglycerin",
    "hemodialysis",
    "cardiac catheterization",
    "intubation",
    "clopidogrel",
    "ondansetron",
    "azithromycin",
    "octreotide",
]
# given: a treatment; measured: a test (the measured span adds " level" half of the time)
_BOTH = [
    "potassium",
    "insulin",
    "heparin",
    "magnesium",
    "oxygen",
    "glucose",
    "calcium",
    "digoxin",
    "phosphate",
    "vitamin b12",
]
_MODIFIERS = ["acute", "worsening", "chronic", "mild", "severe", "new", "recurrent", "acute on chronic"]
_ROUTES = ["iv", "oral", "po", "home"]

_FRAMES = [
    "the patient presented with {p} and was started on {t} .",
    "a {x} was obtained which showed {p} .",
    "he was treated with {t} for {p} .",
    "{x} was negative and {p} resolved after {t} .",
    "she denies {p} but reports {p} .",
    "given concern for {p} , a {x} was ordered .",
    "continue {t} and repeat {x} in the morning .",
    "{p} , {p} and {p} were noted on admission .",
    "{t} was held because of {p} .",
    "his {g} was repleted and a repeat {m} was normal .",
    "{m} this morning was low , so {g} was given .",
    "she was started on {g} for {p} .",
    "a {m} was checked before the dose of {t} .",
    "no {p} was seen on the {x} .",
    "the family was updated at the bedside and agreed with the plan .",
    "he was discharged home on {t} and {t} with follow up in two weeks .",
    "{p} was thought to be due to {p} .",
    "{x} and {x} were unremarkable .",
    "the team discussed the goals of care with the patient this afternoon .",
    "received {t} in the emergency department with improvement in {p} .",
    "rule out {p} with {x} .",
    "{t} was switched to {t} after the {x} came back .",
]
_NOISE_TRIM, _NOISE_MISS = 0.06, 0.03


def _split_vocab(items: list[str], train: bool) -> list[str]:
    """Every fourth item is test-only: the training file never shows it."""
    return [w for i, w in enumerate(items) if i % 4 != 3] if train else list(items)


def _problems() -> list[str]:
    terms = load_terms()
    words = [t.label for t in terms] + [s for t in terms for s in t.synonyms[:1]]
    return sorted(set(words + _SYMPTOMS))


def _span(words: list[str], kind: str, rng: random.Random, modifier: Sequence[str] = ()) -> list[tuple[str, str]]:
    """BIO-tagged tokens of an entity, with its modifier tokens in front, and the annotation noise."""
    draw = rng.random()
    if draw < _NOISE_MISS:
        return [(w, "O") for w in [*modifier, *words]]
    if modifier and draw < _NOISE_MISS + _NOISE_TRIM:
        return [(w, "O") for w in modifier] + _tagged(words, kind)
    return _tagged([*modifier, *words], kind)


def _tagged(words: list[str], kind: str) -> list[tuple[str, str]]:
    return [(w, ("B-" if i == 0 else "I-") + kind) for i, w in enumerate(words)]


def generate_ner(n: int, seed: int, train: bool = True) -> list[list[tuple[str, str]]]:
    """``n`` tagged sentences; ``train``: leave the test-only quarter of every entity list out."""
    rng = random.Random(seed)
    problems = _split_vocab(_problems(), train)
    tests = _split_vocab(_TESTS, train)
    treatments = _split_vocab(_TREATMENTS, train)
    both = _split_vocab(_BOTH, train)
    out = []
    for _ in range(n):
        sentence: list[tuple[str, str]] = []
        for word in rng.choice(_FRAMES).split():
            if word == "{p}":
                mod = rng.choice(_MODIFIERS).split() if rng.random() < 0.35 else []
                sentence += _span(rng.choice(problems).split(), "problem", rng, mod)
            elif word == "{x}":
                sentence += _span(rng.choice(tests).split(), "test", rng)
            elif word == "{t}":
                mod = [rng.choice(_ROUTES)] if rng.random() < 0.25 else []
                sentence += _span(rng.choice(treatments).split(), "treatment", rng, mod)
            elif word == "{g}":
                sentence += _span(rng.choice(both).split(), "treatment", rng)
            elif word == "{m}":
                measured = rng.choice(both).split() + (["level"] if rng.random() < 0.5 else [])
                sentence += _span(measured, "test", rng)
            else:
                sentence.append((word, "O"))
        out.append(sentence)
    return out


def write_conll(path: Path, sentences: list[list[tuple[str, str]]]) -> None:
    write_text(
        "".join("".join(f"{w} {t}\n" for w, t in s) + "\n" for s in sentences), path
    )  # the one way out: atomic, through the guard
