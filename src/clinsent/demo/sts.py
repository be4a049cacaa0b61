"""Seeded generator of demo clinical STS pairs (0-5 scores), written for this project.

DEMO DATA. Each pair combines a *meaning* (a group of paraphrase templates) with a disease
term from the demo vocabulary. The score follows fixed rules: same meaning and same disease
scores high, same meaning with a related disease (same organ system) scores in the middle,
different diseases and different meanings score low, and two meanings that say the opposite of
each other about the same disease ("has a history of" / "denies any history of") score 1.5
although they share most of their words, while paraphrases of one meaning share few ("resolved
before discharge" / "was gone when she left"). Scores are jittered by up to ±1 (annotators
disagree), so they spread over the whole 0-5 range. Mentions use labels, synonyms and
abbreviations, so a model must know that CHF and congestive heart failure are one thing.
The files use the layout of the n2c2 2019 ClinicalSTS training file: ``s1<TAB>s2<TAB>score``.
"""

from __future__ import annotations

import random
from pathlib import Path

from clinsent.demo.vocabulary import DemoTerm, load_terms
from clinsent.io.files import write_text

_MEANINGS: list[list[str]] = [
    [
        "The patient has a history of {d}.",
        "History is significant for {d}.",
        "{D} is among his known chronic problems.",
        "She carries a prior diagnosis of {d}.",
    ],
    [
        "The patient was admitted with an exacerbation of {d}.",
        "She presented to the hospital with worsening {d}.",
        "Admitted for acute worsening of her {d}.",
        "He came in because his {d} had flared up badly.",
    ],
    [
        "The patient was newly diagnosed with {d} and treatment was started.",
        "New diagnosis of {d} made during this admission, therapy initiated.",
        "{D} was found for the first time and she began treatment.",
    ],
    [
        "The patient denies any history of {d}.",
        "No prior history of {d} per the patient.",
        "She reports she has never been told she has {d}.",
    ],
    [
        "Continue the current medications for {d} without changes.",
        "No changes were made to the treatment of his {d}.",
        "Her {d} regimen stays the same.",
        "Home meds for {d} resumed unchanged.",
    ],
    [
        "A specialist was consulted regarding management of {d}.",
        "The consult team was asked to help manage his {d}.",
        "We obtained a specialty consultation for her {d}.",
        "Experts saw him about his {d}.",
    ],
    [
        "The {d} resolved before discharge.",
        "By the day of discharge his {d} had resolved.",
        "Her {d} was gone when she left.",
        "{D} cleared up over the stay.",
    ],
    [
        "There is a family history of {d} in his mother.",
        "His mother also had {d}.",
        "Family history is notable for maternal {d}.",
        "{D} runs on her mother's side.",
    ],
]
# meanings that say the opposite of each other about the same disease: most words shared, a low score
_OPPOSITE = {0: 3, 3: 0, 1: 6, 6: 1}

_PLAIN: list[list[str]] = [
    [
        "The patient was discharged home in stable condition.",
        "He went home in good condition.",
        "She was discharged to home and was stable.",
    ],
    ["Vital signs were within normal limits.", "Her vitals were normal.", "Vital signs were unremarkable."],
    [
        "Physical therapy recommended discharge to rehab.",
        "PT advised that he go to a rehabilitation facility.",
        "Rehabilitation placement was recommended by physical therapy.",
    ],
    [
        "Follow up with the primary care doctor in one week.",
        "She should see her primary care physician within a week.",
        "Please arrange a visit with the PCP in one week.",
    ],
    [
        "The patient tolerated a regular diet.",
        "He was eating a normal diet without problems.",
        "She tolerated regular food.",
    ],
]


def _mention(term: DemoTerm, rng: random.Random) -> str:
    return rng.choice(term.mentions)


def _render(template: str, mention: str) -> str:
    return template.replace("{D}", mention[:1].upper() + mention[1:]).replace("{d}", mention)


def _jitter(score: float, rng: random.Random) -> float:
    return float(min(5.0, max(0.0, score + rng.choice([-1.0, -0.5, -0.5, 0.0, 0.0, 0.5, 0.5, 1.0]))))


Pair = tuple[str, str, float]


def _same(rng: random.Random, terms: list[DemoTerm], t1: DemoTerm, m1: int) -> Pair:
    a, b = rng.sample(_MEANINGS[m1], 2)
    return _render(a, _mention(t1, rng)), _render(b, _mention(t1, rng)), 5.0


def _related(rng: random.Random, terms: list[DemoTerm], t1: DemoTerm, m1: int) -> Pair:
    t2 = rng.choice([t for t in terms if t.category == t1.category and t != t1])
    a, b = rng.sample(_MEANINGS[m1], 2)
    return _render(a, _mention(t1, rng)), _render(b, _mention(t2, rng)), 2.5


def _other_disease(rng: random.Random, terms: list[DemoTerm], t1: DemoTerm, m1: int) -> Pair:
    t2 = rng.choice([t for t in terms if t.category != t1.category])
    a, b = rng.sample(_MEANINGS[m1], 2)
    return _render(a, _mention(t1, rng)), _render(b, _mention(t2, rng)), 1.5


def _other_meaning(rng: random.Random, terms: list[DemoTerm], t1: DemoTerm, m1: int) -> Pair:
    m2 = rng.choice([m for m in range(len(_MEANINGS)) if m != m1])
    s1 = _render(rng.choice(_MEANINGS[m1]), _mention(t1, rng))
    s2 = _render(rng.choice(_MEANINGS[m2]), _mention(t1, rng))
    return s1, s2, 1.5 if _OPPOSITE.get(m1) == m2 else 2.5


def _unrelated(rng: random.Random, terms: list[DemoTerm], t1: DemoTerm, m1: int) -> Pair:
    m2 = rng.choice([m for m in range(len(_MEANINGS)) if m != m1])
    t2 = rng.choice([t for t in terms if t.category != t1.category])
    s1 = _render(rng.choice(_MEANINGS[m1]), _mention(t1, rng))
    s2 = _render(rng.choice(_MEANINGS[m2]), _mention(t2, rng))
    return s1, s2, 0.5


def _opposite(rng: random.Random, terms: list[DemoTerm], t1: DemoTerm, m1: int) -> Pair:
    m1 = rng.choice(sorted(_OPPOSITE))
    s1 = _render(rng.choice(_MEANINGS[m1]), _mention(t1, rng))
    s2 = _render(rng.choice(_MEANINGS[_OPPOSITE[m1]]), _mention(t1, rng))
    return s1, s2, 1.5


def _plain_same(rng: random.Random, terms: list[DemoTerm], t1: DemoTerm, m1: int) -> Pair:
    a, b = rng.sample(rng.choice(_PLAIN), 2)
    return a, b, 4.5


def _plain_other(rng: random.Random, terms: list[DemoTerm], t1: DemoTerm, m1: int) -> Pair:
    g1, g2 = rng.sample(_PLAIN, 2)
    s1, s2 = rng.choice(g1), _render(rng.choice(_MEANINGS[m1]), _mention(t1, rng))
    if rng.random() < 0.5:
        s2 = rng.choice(g2)
    return s1, s2, 0.0


# how a pair is made (drawn with these weights: "same" twice) -> the pair and its score
_KINDS = {
    "same": _same,
    "related": _related,
    "other_disease": _other_disease,
    "other_meaning": _other_meaning,
    "unrelated": _unrelated,
    "opposite": _opposite,
    "plain_same": _plain_same,
    "plain_other": _plain_other,
}
_DRAW = [
    "same",
    "same",
    "related",
    "other_disease",
    "other_meaning",
    "unrelated",
    "opposite",
    "plain_same",
    "plain_other",
]


def generate_pairs(n_pairs: int = 260, seed: int = 11) -> list[tuple[str, str, float]]:
    """Demo STS pairs with scores in [0, 5]; deterministic for a given seed."""
    rng = random.Random(seed)
    terms = load_terms()
    pairs: list[tuple[str, str, float]] = []
    while len(pairs) < n_pairs:
        make = _KINDS[rng.choice(_DRAW)]
        t1 = rng.choice(terms)
        m1 = rng.randrange(len(_MEANINGS))
        s1, s2, score = make(rng, terms, t1, m1)
        if s1 == s2:
            continue
        pairs.append((s1, s2, _jitter(score, rng)))
    return pairs


def write_sts_tsv(path: Path, pairs: list[tuple[str, str, float]]) -> None:
    """n2c2 2019 ClinicalSTS training-file layout: no header, ``s1\\ts2\\tscore``."""
    lines = [f"{a}\t{b}\t{score:.1f}" for a, b, score in pairs]
    write_text("\n".join(lines) + "\n", path)  # the one way out: atomic, through the guard
