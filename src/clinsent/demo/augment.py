"""Seeded generators of the augmentation paper's demo inputs, written for this project.

DEMO DATA, none of it from PubMed, BIOSSES, CMCQA, MedDialog-CN, Baikemy or ChineseBLUE:
- an English sentence corpus in the style of abstract sentences (one per line, as a PubMed
  sample is given to ``sentence_corpora``), from fixed templates over the demo diseases;
- a Chinese sentence corpus of patient questions (one per line, UTF-8), from a small
  vocabulary of Chinese disease names and question frames written by us;
- a BIOSSES-layout pair table (``id, sentence1, sentence2, score, split``; scores 0–4; BLURB's
  64/16/20 split), rescaled from the demo STS generator's pairs;
- two ChineseBLUE-style probes: question-intent classification (single sentences, TSV,
  cMedIC-like) and question-pair paraphrase identification (pairs, JSON lines, cMedQQ-like).
"""

from __future__ import annotations

import csv
import io
import json
import random
from pathlib import Path

from clinsent.demo.sts import generate_pairs
from clinsent.demo.vocabulary import load_terms
from clinsent.io.files import write_text

_ABSTRACT = [
    "Patients with {d} showed a significant improvement after twelve weeks of treatment.",
    "The prevalence of {d} increased steadily over the study period.",
    "We report a retrospective cohort of adults diagnosed with {d}.",
    "Genetic variants were associated with an increased risk of {d}.",
    "Early diagnosis of {d} remains a challenge in primary care.",
    "Mortality among patients with {d} was higher in the older age groups.",
    "This review summarises current treatment options for {d}.",
    "Inflammatory markers were elevated in subjects with {d} compared with controls.",
    "A randomised trial compared two dosing schedules in {d}.",
    "Quality of life was reduced in participants with long-standing {d}.",
    "The mechanisms linking obesity and {d} are not fully understood.",
    "Screening for {d} was cost-effective in high-risk populations.",
]

# Chinese disease names and question frames (intent -> frames), written for the demo.
_ZH_DISEASES = [
    "高血压",
    "糖尿病",
    "肾病",
    "哮喘",
    "肺炎",
    "冠心病",
    "胃炎",
    "肝炎",
    "抑郁症",
    "贫血",
    "痛风",
    "偏头痛",
    "甲状腺炎",
    "关节炎",
    "湿疹",
    "白内障",
]
_ZH_INTENTS: dict[str, list[str]] = {
    "definition": ["什么是{d}？", "{d}是什么病？", "{d}是什么意思？", "请问{d}是怎么回事？"],
    "symptom": ["{d}有哪些症状？", "{d}的早期表现是什么？", "得了{d}会有什么感觉？", "{d}的症状是什么？"],
    "treatment": ["{d}应该怎么治疗？", "{d}吃什么药好？", "{d}能治好吗？", "治疗{d}有什么好方法？"],
    "diet": ["{d}患者饮食要注意什么？", "{d}不能吃什么？", "{d}吃什么食物好？", "得了{d}饮食上有什么禁忌？"],
    "test": ["{d}需要做哪些检查？", "怎么检查是不是{d}？", "{d}要查什么项目？", "诊断{d}要做什么检查？"],
}


def generate_en_sentences(n: int = 600, seed: int = 23) -> list[str]:
    """English abstract-style sentences (distinct, in a seeded order)."""
    rng = random.Random(seed)
    terms = load_terms()
    out: dict[str, None] = {}
    while len(out) < n:
        term = rng.choice(terms)
        out[rng.choice(_ABSTRACT).replace("{d}", rng.choice(term.mentions))] = None
    return list(out)


def generate_zh_sentences(n: int = 300, seed: int = 29) -> list[str]:
    """Chinese patient questions (distinct, in a seeded order)."""
    rng = random.Random(seed)
    frames = [f for fs in _ZH_INTENTS.values() for f in fs]
    everything = [f.replace("{d}", d) for f in frames for d in _ZH_DISEASES]
    rng.shuffle(everything)
    return everything[:n]


def write_lines(path: Path, lines: list[str]) -> None:
    write_text("\n".join(lines) + "\n", path)


def generate_biosses(n: int = 100, seed: int = 31) -> list[dict[str, object]]:
    """Pairs with 0–4 scores (the demo STS rules scaled by 4/5) and BLURB's 64/16/20 split."""
    pairs = generate_pairs(n, seed=seed)
    order = list(range(n))
    random.Random(seed).shuffle(order)
    split = {i: ("train" if k < 0.64 * n else "dev" if k < 0.8 * n else "test") for k, i in enumerate(order)}
    return [
        {"id": i + 1, "sentence1": a, "sentence2": b, "score": round(s * 0.8, 1), "split": split[i]}
        for i, (a, b, s) in enumerate(pairs)
    ]


def write_biosses_tsv(path: Path, rows: list[dict[str, object]]) -> None:
    cols = ["id", "sentence1", "sentence2", "score", "split"]
    lines = ["\t".join(cols)] + ["\t".join(str(r[c]) for c in cols) for r in rows]
    write_text("\n".join(lines) + "\n", path)


def _splits(n: int, rng: random.Random) -> list[str]:
    names = ["train"] * (n * 3 // 5) + ["dev"] * (n // 5)
    names += ["test"] * (n - len(names))
    rng.shuffle(names)
    return names


def generate_intents(n: int = 200, seed: int = 37) -> list[dict[str, str]]:
    """cMedIC-like: a question and its intent, with train/dev/test splits (3:1:1)."""
    rng = random.Random(seed)
    rows = []
    for split in _splits(n, rng):
        intent = rng.choice(list(_ZH_INTENTS))
        rows.append(
            {
                "text": rng.choice(_ZH_INTENTS[intent]).replace("{d}", rng.choice(_ZH_DISEASES)),
                "label": intent,
                "split": split,
            }
        )
    return rows


def write_intents_tsv(path: Path, rows: list[dict[str, str]]) -> None:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, ["text", "label", "split"], delimiter="\t", lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    write_text(buf.getvalue(), path)


def generate_question_pairs(n: int = 200, seed: int = 41) -> list[dict[str, str]]:
    """cMedQQ-like: two questions, label 1 when they ask the same (intent and disease), else 0."""
    rng = random.Random(seed)
    rows = []
    intents = list(_ZH_INTENTS)
    for split in _splits(n, rng):
        intent, disease = rng.choice(intents), rng.choice(_ZH_DISEASES)
        q1 = rng.choice(_ZH_INTENTS[intent]).replace("{d}", disease)
        if rng.random() < 0.5:
            q2 = rng.choice([f for f in _ZH_INTENTS[intent] if f.replace("{d}", disease) != q1]).replace(
                "{d}", disease
            )
            label = "1"
        elif rng.random() < 0.5:  # same disease, another intent
            other = rng.choice([i for i in intents if i != intent])
            q2, label = rng.choice(_ZH_INTENTS[other]).replace("{d}", disease), "0"
        else:  # same intent, another disease
            q2 = rng.choice(_ZH_INTENTS[intent]).replace("{d}", rng.choice([d for d in _ZH_DISEASES if d != disease]))
            label = "0"
        rows.append({"text1": q1, "text2": q2, "label": label, "split": split})
    return rows


def write_jsonl(path: Path, rows: list[dict[str, str]]) -> None:
    write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), path)
