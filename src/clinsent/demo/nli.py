"""Seeded generator of demo clinical NLI pairs in the MedNLI jsonl layout, written for this project.

DEMO DATA, made to be hard for a bag of words. Each premise states the patient's *status* with
respect to a disease from the demo vocabulary (a long-standing history, a new diagnosis, denied,
resolved, worsening, family history only, suspected, ruled out), in one of several wordings.
Each hypothesis makes one *claim* from a shared pool ("The patient has {d}.", "The patient has
never had {d}.", "It is not certain whether the patient has {d}.", ...), and its label follows
from the pair: the same claim is entailed by one status, contradicted by another and neutral
to the rest, so the classes share vocabulary and structure (negations, hedges, near-miss
contradictions, paraphrased entailments through a category noun such as "a kidney condition").
Some neutral hypotheses make an entailed claim about a related disease (same organ system).
Premise and hypothesis mention the disease by label, synonym or abbreviation independently.
About 4% of the labels are replaced by another (annotation noise), 2% carry SNLI's ``-`` (no
gold label), and every tenth premise has no contradiction, so the triplet reader's drop count
is exercised.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from clinsent.demo.vocabulary import load_terms
from clinsent.io.files import write_text

# The patient's status with respect to a disease {d}, each written several ways (the premises).
_STATES: dict[str, list[str]] = {
    "chronic": [
        "She has a long-standing history of {d} managed with home medications.",
        "Past medical history is significant for {d}, diagnosed many years ago.",
        "He has had {d} for over a decade and follows with his primary care doctor.",
    ],
    "new": [
        "He was newly diagnosed with {d} during this admission.",
        "Workup during this hospital stay revealed previously unknown {d}.",
        "{D} was identified for the first time on this admission.",
    ],
    "denies": [
        "The patient denies any prior history of {d}.",
        "She reports that she has never been told she has {d}.",
        "No known history of {d} per the patient and his wife.",
    ],
    "resolved": [
        "Her {d} resolved before discharge.",
        "By the day of discharge his {d} had resolved with treatment.",
        "The {d} improved steadily and was gone at discharge.",
    ],
    "worse": [
        "He was admitted with an acute exacerbation of his {d}.",
        "She presented to the emergency department with worsening {d}.",
        "Admitted for acute worsening of known {d}.",
    ],
    "family": [
        "Her mother and sister both have {d}.",
        "Family history is notable for {d} in his father.",
        "There is a strong family history of {d}.",
    ],
    "possible": [
        "There is concern for possible {d}; the workup is pending.",
        "{D} could not be excluded and further tests were ordered.",
        "The team suspects {d}, but it has not been confirmed.",
    ],
    "ruled_out": [
        "{D} was considered but ruled out by testing.",
        "The workup for {d} was negative.",
        "Initial concern for {d}, which was excluded on further testing.",
    ],
}

# Claims a hypothesis makes, and their label given each status (E, C, N; a status left out: N).
# One claim is entailed by some premises, contradicted by others and neutral to the rest, so a
# hypothesis's wording alone does not give its label.
_CLAIMS: list[tuple[str, dict[str, str]]] = [
    ("The patient has {d}.", {"chronic": "E", "new": "E", "worse": "E", "denies": "C", "ruled_out": "C"}),
    ("The patient has a {c}.", {"chronic": "E", "new": "E", "worse": "E"}),
    ("The patient has never had {d}.", {"denies": "E", "chronic": "C", "resolved": "C", "worse": "C"}),
    ("The patient does not have {d}.", {"ruled_out": "E", "chronic": "C", "new": "C", "worse": "C"}),
    (
        "The patient's {d} is a long-standing problem.",
        {"chronic": "E", "worse": "E", "new": "C", "denies": "C", "ruled_out": "C"},
    ),
    (
        "{D} was diagnosed for the first time in the hospital.",
        {"new": "E", "chronic": "C", "worse": "C", "possible": "C", "ruled_out": "C"},
    ),
    ("The patient's {d} got better during the stay.", {"resolved": "E", "denies": "C", "ruled_out": "C"}),
    ("The patient's {d} was getting worse.", {"worse": "E", "denies": "C", "ruled_out": "C"}),
    ("Someone in the patient's family has {d}.", {"family": "E"}),
    ("Nobody in the patient's family has had {d}.", {"family": "C"}),
    (
        "It is not certain whether the patient has {d}.",
        {"possible": "E", "chronic": "C", "new": "C", "worse": "C", "ruled_out": "C"},
    ),
    ("Tests were done to look for {d}.", {"ruled_out": "E", "possible": "E"}),
    ("The patient's {d} was caused by smoking.", {"denies": "C", "ruled_out": "C"}),
    ("The patient takes medication for {d}.", {"chronic": "E", "denies": "C", "ruled_out": "C"}),
    ("The patient will need surgery for {d}.", {"denies": "C", "ruled_out": "C"}),
]
_LABELS = {"E": "entailment", "C": "contradiction", "N": "neutral"}
_CATEGORY_NOUN = {
    "cardio": "heart or blood vessel condition",
    "resp": "lung condition",
    "endo": "hormonal or metabolic condition",
    "renal": "kidney condition",
    "gi": "digestive condition",
    "infect": "infection",
    "neuro": "neurological condition",
    "onc": "cancer",
    "other": "chronic medical condition",
    "mental": "mental health condition",
}


def _fill(template: str, mention: str, category: str = "other") -> str:
    text = (
        template.replace("{D}", mention[:1].upper() + mention[1:])
        .replace("{d}", mention)
        .replace("{c}", _CATEGORY_NOUN[category])
    )
    return text[:1].upper() + text[1:]


def generate_nli(n_premises: int = 360, seed: int = 13, noise: float = 0.04) -> list[dict[str, str]]:
    """Rows in the MedNLI jsonl layout (sentence1, sentence2, gold_label, pairID): per premise one
    entailment, one contradiction and one neutral hypothesis, drawn from claims whose label
    depends on the premise's status (see the module docstring); ``noise``: the share of labels
    replaced by another (annotation noise)."""
    rng = random.Random(seed)
    terms = load_terms()
    rows: list[dict[str, str]] = []
    for p in range(n_premises):
        status = rng.choice(sorted(_STATES))
        term = rng.choice(terms)
        premise = _fill(rng.choice(_STATES[status]), rng.choice(term.mentions))
        by_label: dict[str, list[str]] = {"E": [], "C": [], "N": []}
        for claim, labels in _CLAIMS:
            by_label[labels.get(status, "N")].append(claim)
        other = rng.choice([t for t in terms if t.category == term.category and t != term] or terms)
        hyps = [
            (_fill(rng.choice(by_label["E"]), rng.choice(term.mentions), term.category), "entailment"),
            (_fill(rng.choice(by_label["N"]), rng.choice(term.mentions), term.category), "neutral"),
        ]
        if rng.random() < 0.3:  # a near miss: the premise's claim about a related disease is not settled
            near = [c for c in by_label["E"] if "{c}" not in c]  # (a disease of the same system keeps {c} true)
            hyps[1] = (_fill(rng.choice(near), rng.choice(other.mentions), other.category), "neutral")
        if p % 10 != 9:  # every tenth premise has no contradiction: dropped by the triplet reader
            hyps.append((_fill(rng.choice(by_label["C"]), rng.choice(term.mentions), term.category), "contradiction"))
        for k, (h, label) in enumerate(hyps):
            draw = rng.random()
            gold = (
                "-"
                if draw < 0.02
                else rng.choice([v for v in _LABELS.values() if v != label])
                if draw < 0.02 + noise
                else label
            )
            rows.append({"sentence1": premise, "sentence2": h, "gold_label": gold, "pairID": f"demo-{p}-{k}"})
    return rows


def write_nli_jsonl(path: Path, rows: list[dict[str, str]] | list[dict[str, object]]) -> None:
    write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), path
    )  # the one way out: atomic, through the guard


# General-domain frames (SNLI / MultiNLI layout): {x} is a person, {y} a place
_GENERAL: list[tuple[str, list[str], list[str], list[str]]] = [
    (
        "{x} is walking a dog along the {y}.",
        ["{x} is outside with an animal."],
        ["{x} is asleep indoors."],
        ["{x} is going home."],
    ),
    ("{x} is reading a newspaper near the {y}.", ["{x} is reading."], ["{x} is swimming."], ["{x} likes the news."]),
    (
        "{x} plays a guitar on a bench by the {y}.",
        ["{x} is making music."],
        ["{x} is silent."],
        ["{x} is a famous musician."],
    ),
    (
        "{x} is cooking dinner for a large family.",
        ["{x} is preparing food."],
        ["{x} is fasting alone."],
        ["{x} is cooking pasta."],
    ),
]
_PEOPLE = ["A man", "A woman", "A child", "An old man", "A young woman", "A teenager", "A teacher", "A cyclist"]
_PLACES = ["river", "market", "park", "station", "beach", "harbor"]
_GENRES = ["fiction", "government", "slate", "telephone", "travel"]

# Radiology frames (RadNLI layout): {f} is a finding
_RADIOLOGY: list[tuple[str, list[str], list[str], list[str]]] = [
    ("There is a small {f} on the right.", ["A {f} is present."], ["No {f} is seen."], ["The {f} is new."]),
    ("No evidence of {f}.", ["There is no {f}."], ["There is a large {f}."], ["The lungs are clear."]),
    (
        "The {f} has increased since the prior study.",
        ["The {f} is worse."],
        ["The {f} has resolved."],
        ["A chest tube is in place."],
    ),
]
_FINDINGS = ["pleural effusion", "pneumothorax", "consolidation", "atelectasis", "pulmonary edema", "nodule"]


def _pairs(
    frames: list[tuple[str, list[str], list[str], list[str]]],
    fill: dict[str, list[str]],
    n: int,
    seed: int,
    no_label: float,
) -> list[tuple[int, int, str, str, str]]:
    rng = random.Random(seed)
    out = []
    for p in range(n):
        premise_t, ents, cons, neus = rng.choice(frames)
        values = {k: rng.choice(v) for k, v in fill.items()}

        def render(t: str, values: dict[str, str] = values) -> str:
            for k, v in values.items():
                t = t.replace("{" + k + "}", v)
            return t[:1].upper() + t[1:]

        hyps = (
            [(h, "entailment") for h in ents] + [(h, "contradiction") for h in cons] + [(h, "neutral") for h in neus]
        )
        for k, (h, label) in enumerate(hyps):
            out.append((p, k, render(premise_t), render(h), "-" if rng.random() < no_label else label))
    return out


def generate_snli(n_premises: int = 150, seed: int = 53, genres: bool = False) -> list[dict[str, object]]:
    """Rows in the SNLI 1.0 jsonl layout (annotator_labels, captionID, gold_label, pairID,
    sentence1, sentence2), or MultiNLI's (``genres``: also genre and promptID); about 2% carry
    ``-`` (no consensus label), as in SNLI."""
    rows: list[dict[str, object]] = []
    for p, k, premise, hyp, label in _pairs(_GENERAL, {"x": _PEOPLE, "y": _PLACES}, n_premises, seed, 0.02):
        row: dict[str, object] = {
            "annotator_labels": [label if label != "-" else "neutral"],
            "captionID": f"demo{p}.jpg#0",
            "gold_label": label,
            "pairID": f"demo{p}.jpg#0r{k}",
            "sentence1": premise,
            "sentence2": hyp,
        }
        if genres:
            row = {
                "annotator_labels": row["annotator_labels"],
                "genre": _GENRES[p % len(_GENRES)],
                "gold_label": label,
                "pairID": f"{p}{k}",
                "promptID": str(p),
                "sentence1": premise,
                "sentence2": hyp,
            }
        rows.append(row)
    return rows


def generate_radnli(n_premises: int = 60, seed: int = 59) -> list[dict[str, object]]:
    """Rows in the RadNLI jsonl layout (pair_id, sentence1, sentence2, gold_label)."""
    return [
        {"pair_id": f"{p}-{k}", "sentence1": premise, "sentence2": hyp, "gold_label": label}
        for p, k, premise, hyp, label in _pairs(_RADIOLOGY, {"f": _FINDINGS}, n_premises, seed, 0.0)
    ]
