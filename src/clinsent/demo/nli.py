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


def write_nli_jsonl(path: Path, rows: list[dict[str, str]]) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
