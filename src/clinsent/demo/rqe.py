"""Seeded generator of demo recognising-question-entailment pairs in the MEDIQA 2019 / AMIA
2016 RQE XML layout, written for this project.

DEMO DATA. A consumer health question (CHQ: a longer, personal question) is paired with a
frequently asked question (FAQ). The pair is true when the FAQ asks what the CHQ asks (same
disease, same intent: treatment, symptoms, cause, prognosis), false when the intent or the
disease differs. Mentions use labels, synonyms and abbreviations.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path
from xml.sax.saxutils import escape, quoteattr

from clinsent.demo.vocabulary import DemoTerm, load_terms

_CHQ = {
    "treatment": ["My father was told he has {d} & I'd like to know what treatments are available for it.",
                  "I was diagnosed with {d} last month. What are my options for treating it?"],
    "symptoms": ["My sister thinks she might have {d}. What signs should we look out for?",
                 "How do I know if the pain I have is {d}? What are the symptoms?"],
    "cause": ["Why do people get {d}? My mother has it and I'm worried about the cause.",
              "What causes {d}? I'm 45 and was just told I have it."],
    "prognosis": ["My husband has {d}. Will he get better, and how long does it last?",
                  "What is the outlook for someone with {d}? Can it be cured?"],
}
_FAQ = {
    "treatment": ["What are the treatments for {d}?", "How is {d} treated?"],
    "symptoms": ["What are the symptoms of {d}?", "What are the signs of {d}?"],
    "cause": ["What causes {d}?", "What are the causes of {d}?"],
    "prognosis": ["What is the outlook for {d}?", "Can {d} be cured?"],
}


# how a pair's FAQ is chosen -> its (term, intent): the CHQ's own (entailed), or one of the two changed
_FAQ_OF: dict[str, Callable[[random.Random, list[DemoTerm], list[str], DemoTerm, str], tuple[DemoTerm, str]]] = {
    "same": lambda rng, terms, intents, term, intent: (term, intent),
    "other_intent": lambda rng, terms, intents, term, intent: (term, rng.choice([i for i in intents if i != intent])),
    "other_disease": lambda rng, terms, intents, term, intent: (
        rng.choice([t for t in terms if t.category != term.category]), intent),
}


def generate_rqe(n_pairs: int, seed: int) -> list[tuple[str, str, bool]]:
    rng = random.Random(seed)
    terms = load_terms()
    intents = list(_CHQ)
    pairs = []
    for _ in range(n_pairs):
        term, intent = rng.choice(terms), rng.choice(intents)
        chq = rng.choice(_CHQ[intent]).replace("{d}", rng.choice(term.mentions))
        kind = rng.choice(["same", "same", "other_intent", "other_disease"])
        f_term, f_intent = _FAQ_OF[kind](rng, terms, intents, term, intent)
        faq = rng.choice(_FAQ[f_intent]).replace("{d}", rng.choice(f_term.mentions))
        pairs.append((chq, faq, (f_term, f_intent) == (term, intent)))
    return pairs


def write_rqe_xml(path: Path, pairs: list[tuple[str, str, bool]], root: str = "RQE_Dataset") -> None:
    lines = ['<?xml version="1.0" encoding="UTF-8"?>', f"<{root}>"]
    for i, (chq, faq, value) in enumerate(pairs, start=1):
        lines += [f"<pair pid={quoteattr(str(i))} value={quoteattr('true' if value else 'false')}>",
                  f"<chq>{escape(chq)}</chq>", f"<faq>{escape(faq)}</faq>", "</pair>"]
    lines.append(f"</{root}>")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
