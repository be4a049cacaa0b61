"""Seeded generator of demo clinical NLI pairs in the MedNLI jsonl layout, written for this project.

DEMO DATA. Each premise states a finding about a disease from the demo vocabulary; its
hypotheses are an entailment (a paraphrase or a more general statement), a contradiction (the
negation) and a neutral statement (something the premise does not settle), mentioning the
disease by label, synonym or abbreviation. A few premises lack a contradiction, so the triplet
reader's drop count is exercised, and a few pairs carry SNLI's ``-`` (no gold label).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from clinsent.demo.vocabulary import load_terms

# (premise, entailments, contradictions, neutrals); {d} is the disease mention
_FRAMES: list[tuple[str, list[str], list[str], list[str]]] = [
    ("The patient was admitted with an acute exacerbation of {d}.",
     ["The patient has {d}.", "The patient was admitted to the hospital."],
     ["The patient has never had {d}."], ["The patient has a family history of {d}."]),
    ("She has a long-standing history of {d} treated with medications.",
     ["She has a chronic condition.", "She has been diagnosed with {d}."],
     ["She has no medical problems."], ["Her {d} is well controlled."]),
    ("He was newly diagnosed with {d} during this admission.",
     ["He has {d}.", "A new diagnosis was made in the hospital."],
     ["He has had {d} for many years."], ["He will need surgery for {d}."]),
    ("The patient denies any prior history of {d}.",
     ["The patient reports no history of {d}."],
     ["The patient has a history of {d}."], ["The patient smokes."]),
    ("Her {d} resolved before discharge.",
     ["Her condition improved during the stay."],
     ["Her {d} worsened before discharge."], ["She was discharged to a rehabilitation facility."]),
    ("A specialist was consulted for management of his {d}.",
     ["He was seen by a consultant.", "His {d} needed specialist care."],
     ["No consultation was requested."], ["His {d} was caused by medication."]),
]


def _mention(rng: random.Random, term: object) -> str:
    return rng.choice(term.mentions)  # type: ignore[attr-defined]


def _fill(template: str, mention: str) -> str:
    text = template.replace("{d}", mention)
    return text[:1].upper() + text[1:]


def generate_nli(n_premises: int = 120, seed: int = 13) -> list[dict[str, str]]:
    """Rows in the MedNLI jsonl layout (sentence1, sentence2, gold_label, pairID)."""
    rng = random.Random(seed)
    terms = load_terms()
    rows: list[dict[str, str]] = []
    for p in range(n_premises):
        premise_t, ents, cons, neus = rng.choice(_FRAMES)
        mention = _mention(rng, rng.choice(terms))
        premise = _fill(premise_t, mention)
        hyps = [(h, "entailment") for h in ents] + [(h, "neutral") for h in neus]
        if p % 10 != 9:  # every tenth premise has no contradiction: dropped by the triplet reader
            hyps += [(h, "contradiction") for h in cons]
        for k, (h, label) in enumerate(hyps):
            gold = "-" if rng.random() < 0.03 else label
            rows.append({"sentence1": premise, "sentence2": _fill(h, mention), "gold_label": gold,
                         "pairID": f"demo-{p}-{k}"})
    return rows


def write_nli_jsonl(path: Path, rows: list[dict[str, str]] | list[dict[str, object]]) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


# General-domain frames (SNLI / MultiNLI layout): {x} is a person, {y} a place
_GENERAL: list[tuple[str, list[str], list[str], list[str]]] = [
    ("{x} is walking a dog along the {y}.", ["{x} is outside with an animal."], ["{x} is asleep indoors."],
     ["{x} is going home."]),
    ("{x} is reading a newspaper near the {y}.", ["{x} is reading."], ["{x} is swimming."], ["{x} likes the news."]),
    ("{x} plays a guitar on a bench by the {y}.", ["{x} is making music."], ["{x} is silent."],
     ["{x} is a famous musician."]),
    ("{x} is cooking dinner for a large family.", ["{x} is preparing food."], ["{x} is fasting alone."],
     ["{x} is cooking pasta."]),
]
_PEOPLE = ["A man", "A woman", "A child", "An old man", "A young woman", "A teenager", "A teacher", "A cyclist"]
_PLACES = ["river", "market", "park", "station", "beach", "harbor"]
_GENRES = ["fiction", "government", "slate", "telephone", "travel"]

# Radiology frames (RadNLI layout): {f} is a finding
_RADIOLOGY: list[tuple[str, list[str], list[str], list[str]]] = [
    ("There is a small {f} on the right.", ["A {f} is present."], ["No {f} is seen."], ["The {f} is new."]),
    ("No evidence of {f}.", ["There is no {f}."], ["There is a large {f}."], ["The lungs are clear."]),
    ("The {f} has increased since the prior study.", ["The {f} is worse."], ["The {f} has resolved."],
     ["A chest tube is in place."]),
]
_FINDINGS = ["pleural effusion", "pneumothorax", "consolidation", "atelectasis", "pulmonary edema", "nodule"]


def _pairs(frames: list[tuple[str, list[str], list[str], list[str]]], fill: dict[str, list[str]], n: int,
           seed: int, no_label: float) -> list[tuple[int, int, str, str, str]]:
    rng = random.Random(seed)
    out = []
    for p in range(n):
        premise_t, ents, cons, neus = rng.choice(frames)
        values = {k: rng.choice(v) for k, v in fill.items()}

        def render(t: str, values: dict[str, str] = values) -> str:
            for k, v in values.items():
                t = t.replace("{" + k + "}", v)
            return t[:1].upper() + t[1:]

        hyps = [(h, "entailment") for h in ents] + [(h, "contradiction") for h in cons] + [(h, "neutral") for h in neus]
        for k, (h, label) in enumerate(hyps):
            out.append((p, k, render(premise_t), render(h), "-" if rng.random() < no_label else label))
    return out


def generate_snli(n_premises: int = 150, seed: int = 53, genres: bool = False) -> list[dict[str, object]]:
    """Rows in the SNLI 1.0 jsonl layout (annotator_labels, captionID, gold_label, pairID,
    sentence1, sentence2), or MultiNLI's (``genres``: also genre and promptID); about 2% carry
    ``-`` (no consensus label), as in SNLI."""
    rows: list[dict[str, object]] = []
    for p, k, premise, hyp, label in _pairs(_GENERAL, {"x": _PEOPLE, "y": _PLACES}, n_premises, seed, 0.02):
        row: dict[str, object] = {"annotator_labels": [label if label != "-" else "neutral"],
                                  "captionID": f"demo{p}.jpg#0", "gold_label": label, "pairID": f"demo{p}.jpg#0r{k}",
                                  "sentence1": premise, "sentence2": hyp}
        if genres:
            row = {"annotator_labels": row["annotator_labels"], "genre": _GENRES[p % len(_GENRES)],
                   "gold_label": label, "pairID": f"{p}{k}", "promptID": str(p), "sentence1": premise,
                   "sentence2": hyp}
        rows.append(row)
    return rows


def generate_radnli(n_premises: int = 60, seed: int = 59) -> list[dict[str, object]]:
    """Rows in the RadNLI jsonl layout (pair_id, sentence1, sentence2, gold_label)."""
    return [{"pair_id": f"{p}-{k}", "sentence1": premise, "sentence2": hyp, "gold_label": label}
            for p, k, premise, hyp, label in _pairs(_RADIOLOGY, {"f": _FINDINGS}, n_premises, seed, 0.0)]
