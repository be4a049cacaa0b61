"""Seeded generator of demo recognising-question-entailment pairs in the MEDIQA 2019 / AMIA
2016 RQE XML layout, written for this project.

DEMO DATA, made so that word overlap does not give the label. A consumer health question (CHQ:
a longer, personal question) is paired with a frequently asked question (FAQ). The pair is true
when the FAQ asks what the CHQ asks (same disease, same intent: treatment, symptoms, cause,
prognosis, prevention, diagnosis), false otherwise. Each intent is asked several ways, and the
false pairs are near misses: the same disease with another intent worded with the CHQ's own
words ("treatment" in a question about side effects, "cause" in a question about what it
causes), or the same intent about a disease of the same organ system (type 1 for type 2
diabetes), so both classes share most of their words. Mentions use labels, synonyms and
abbreviations independently on both sides; about 4% of the labels are flipped (annotation
noise).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path
from xml.sax.saxutils import escape, quoteattr

from clinsent.demo.vocabulary import DemoTerm, load_terms
from clinsent.io.files import write_text

_CHQ = {
    "treatment": [
        "My father was told he has {d} & I'd like to know what treatments are available for it.",
        "I was diagnosed with {d} last month. What are my options for treating it?",
        "What can I do about my {d}? The medicine I take does not seem to help.",
    ],
    "symptoms": [
        "My sister thinks she might have {d}. What signs should we look out for?",
        "How do I know if the pain I have is {d}? What does it feel like?",
        "My son keeps feeling unwell and the doctor mentioned {d}. How does it show up?",
    ],
    "cause": [
        "Why do people get {d}? My mother has it and I'm worried about the cause.",
        "What causes {d}? I'm 45 and was just told I have it.",
        "My doctor says I have {d} but could not tell me why. Where does it come from?",
    ],
    "prognosis": [
        "My husband has {d}. Will he get better, and how long does it last?",
        "What is the outlook for someone with {d}? Can it be cured?",
        "I have had {d} for a year. Is it going to get worse over time?",
    ],
    "prevention": [
        "My brother has {d}. How can I avoid getting it too?",
        "Is there anything I can do to keep from getting {d}? It runs in my family.",
        "Can {d} be prevented? My father had it and I'm worried.",
    ],
    "diagnosis": [
        "My doctor thinks I have {d}. What tests will they do to find out?",
        "How is {d} diagnosed? I've had symptoms for weeks.",
        "What kind of test shows whether my daughter has {d}?",
    ],
}
# per intent: FAQs that ask it, and near-miss FAQs of another intent that reuse the intent's words
_FAQ = {
    "treatment": ["What are the treatments for {d}?", "How is {d} treated?", "What medicines are used for {d}?"],
    "symptoms": ["What are the symptoms of {d}?", "What are the signs of {d}?", "How does {d} show up?"],
    "cause": ["What causes {d}?", "What are the causes of {d}?", "Why do people get {d}?"],
    "prognosis": ["What is the outlook for {d}?", "Can {d} be cured?", "Does {d} get worse over time?"],
    "prevention": ["How can {d} be prevented?", "How can I avoid getting {d}?", "Can {d} be prevented?"],
    "diagnosis": ["How is {d} diagnosed?", "What tests show whether someone has {d}?", "How do doctors find {d}?"],
}
_NEAR_MISS = {  # worded like the intent, asking another
    "treatment": ["What are the side effects of the treatments for {d}?", "Can the medicines for {d} be stopped?"],
    "symptoms": ["What causes the symptoms of {d}?", "Which symptoms of {d} need a doctor right away?"],
    "cause": ["What problems can {d} cause?", "Can {d} cause other diseases?"],
    "prognosis": ["Can {d} be cured with medicine?", "Does {d} get worse without treatment?"],
    "prevention": ["How can complications of {d} be prevented?", "Can {d} be prevented from coming back?"],
    "diagnosis": ["How is {d} treated once it is diagnosed?", "Do the tests for {d} hurt?"],
}


def _faq_same(rng: random.Random, terms: list[DemoTerm], term: DemoTerm, intent: str) -> tuple[str, DemoTerm, bool]:
    return rng.choice(_FAQ[intent]), term, True


def _faq_near_miss(
    rng: random.Random, terms: list[DemoTerm], term: DemoTerm, intent: str
) -> tuple[str, DemoTerm, bool]:
    return rng.choice(_NEAR_MISS[intent]), term, False


def _faq_related(rng: random.Random, terms: list[DemoTerm], term: DemoTerm, intent: str) -> tuple[str, DemoTerm, bool]:
    related = [t for t in terms if t.category == term.category and t != term]
    return rng.choice(_FAQ[intent]), rng.choice(related), False


# how a pair's FAQ is made -> (template, the FAQ's disease, entailed); drawn with these weights
_FAQ_OF: dict[str, Callable[[random.Random, list[DemoTerm], DemoTerm, str], tuple[str, DemoTerm, bool]]] = {
    "same": _faq_same,
    "near_miss": _faq_near_miss,
    "related": _faq_related,
}
_DRAW = ["same", "same", "near_miss", "related"]


def generate_rqe(n_pairs: int, seed: int, noise: float = 0.04) -> list[tuple[str, str, bool]]:
    rng = random.Random(seed)
    terms = load_terms()
    intents = list(_CHQ)
    pairs = []
    for _ in range(n_pairs):
        term, intent = rng.choice(terms), rng.choice(intents)
        chq = rng.choice(_CHQ[intent]).replace("{d}", rng.choice(term.mentions))
        template, f_term, value = _FAQ_OF[rng.choice(_DRAW)](rng, terms, term, intent)
        faq = template.replace("{d}", rng.choice(f_term.mentions))
        pairs.append((chq, faq, value != (rng.random() < noise)))
    return pairs


def write_rqe_xml(path: Path, pairs: list[tuple[str, str, bool]], root: str = "RQE_Dataset") -> None:
    lines = ['<?xml version="1.0" encoding="UTF-8"?>', f"<{root}>"]
    for i, (chq, faq, value) in enumerate(pairs, start=1):
        lines += [
            f"<pair pid={quoteattr(str(i))} value={quoteattr('true' if value else 'false')}>",
            f"<chq>{escape(chq)}</chq>",
            f"<faq>{escape(faq)}</faq>",
            "</pair>",
        ]
    lines.append(f"</{root}>")
    write_text("\n".join(lines) + "\n", path)
