"""Text augmentations that make SimCSE's second view (the biomedical augmentation paper,
section 4.2 and Table 2; dropout stays on, as in its "+X" rows).

Each function takes the units of one text (words split on whitespace, or characters for
languages written without spaces) and a ``numpy`` generator, and returns the augmented units;
the caller joins them again. The draws come from a generator seeded by (seed, step), so a
resumed job and a rerun see the same views.

- ``random_crop`` (RC): a contiguous span of round(rate * n) units (at least 1, at most n - 1)
  is replaced, unit by unit, by the tokenizer's mask token (Table 2 shows one placeholder per
  cropped word);
- ``word_deletion`` (WD, as EDA: Wei and Zou 2019, its ``random_deletion``): each unit is dropped
  with probability ``rate``; never all of them (if every unit was drawn for deletion, one unit,
  chosen at random, stays);
- ``random_swap`` (RS, as EDA's ``random_swap`` with one swap, the paper's "two words ... are
  swapped"): a first position is drawn, then a second one up to three times until it differs;
  when all three draws hit the first position the text stays unchanged (probability n^-3;
  texts of one unit are unchanged);
- ``stopword_insertion`` (SI): round(rate * n) stop words (at least 1) from ``stopwords`` are
  inserted at random positions. The paper names neither the list nor the count: both are
  knobs, the list defaults to :data:`STOPWORDS`;
- ``punctuation_insertion`` (PI, as AEDA: Karimi et al. 2021, its ``insert_punctuation_marks``):
  k marks drawn uniformly from ``. ; ? : ! ,`` are inserted before k distinct units (never after
  the last one), with k uniform in 1 .. int(rate * n + 1), at most n (AEDA's rate is 0.3).
  ``tests/losses/test_text_augment.py`` checks WD, RS and PI in distribution against ports of EDA's
  and AEDA's functions (chi-squared tests).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

PUNCTUATION = (".", ";", "?", ":", "!", ",")
# Our fixed list of short English function words (the paper gives "and, the, of, etc.").
STOPWORDS = (
    "a",
    "an",
    "the",
    "and",
    "or",
    "of",
    "to",
    "in",
    "on",
    "at",
    "by",
    "for",
    "with",
    "from",
    "as",
    "is",
    "was",
    "be",
    "it",
    "this",
    "that",
    "which",
    "there",
    "then",
    "so",
    "but",
    "also",
    "very",
)


def units(text: str, unit: str) -> list[str]:
    return text.split() if unit == "words" else list(text)


def join(parts: Sequence[str], unit: str) -> str:
    return " ".join(parts) if unit == "words" else "".join(parts)


def random_crop(parts: list[str], rate: float, rng: np.random.Generator, mask_token: str) -> list[str]:
    n = len(parts)
    k = min(n - 1, max(1, round(rate * n))) if n > 1 else 0
    if k == 0:
        return list(parts)
    start = int(rng.integers(0, n - k + 1))
    return parts[:start] + [mask_token] * k + parts[start + k :]


def word_deletion(parts: list[str], rate: float, rng: np.random.Generator) -> list[str]:
    if not parts:
        return []
    drop = rng.random(len(parts)) < rate
    if drop.all():
        drop[int(rng.integers(0, len(parts)))] = False
    return [p for p, d in zip(parts, drop, strict=True) if not d]


def random_swap(parts: list[str], rng: np.random.Generator, tries: int = 3) -> list[str]:
    out = list(parts)
    if len(out) < 2:
        return out
    i = int(rng.integers(0, len(out)))
    for _ in range(tries):  # EDA's rule: a second position unlike the first within three draws, else no swap
        j = int(rng.integers(0, len(out)))
        if j != i:
            out[i], out[j] = out[j], out[i]
            break
    return out


def _insert(parts: list[str], items: list[str], rng: np.random.Generator) -> list[str]:
    """Insert ``items`` at distinct random gaps (0 .. n, before the unit at that index)."""
    gaps = np.sort(rng.choice(len(parts) + 1, size=min(len(items), len(parts) + 1), replace=False))
    out: list[str] = []
    k = 0
    for g in range(len(parts) + 1):
        while k < len(gaps) and gaps[k] == g:
            out.append(items[k])
            k += 1
        if g < len(parts):
            out.append(parts[g])
    return out


def stopword_insertion(
    parts: list[str], rate: float, rng: np.random.Generator, stopwords: Sequence[str] = STOPWORDS
) -> list[str]:
    k = max(1, round(rate * len(parts)))
    words = [str(stopwords[int(i)]) for i in rng.integers(0, len(stopwords), size=k)]
    return _insert(parts, words, rng)


def punctuation_insertion(parts: list[str], rate: float, rng: np.random.Generator) -> list[str]:
    n = len(parts)
    if n == 0:
        return []
    k = int(rng.integers(1, min(n, int(rate * n + 1)) + 1))
    before = set(int(i) for i in rng.choice(n, size=k, replace=False))
    out: list[str] = []
    for i, part in enumerate(parts):
        if i in before:
            out.append(PUNCTUATION[int(rng.integers(0, len(PUNCTUATION)))])
        out.append(part)
    return out


# name -> the augmentation over a sentence's units: (parts, rate, rng, mask token, stop words) -> parts
Augmentation = Callable[[list[str], float, np.random.Generator, str, Sequence[str]], list[str]]
TEXT_AUGMENTATIONS: dict[str, Augmentation] = {
    "random_crop": lambda parts, rate, rng, mask, words: random_crop(parts, rate, rng, mask),
    "word_deletion": lambda parts, rate, rng, mask, words: word_deletion(parts, rate, rng),
    "random_swap": lambda parts, rate, rng, mask, words: random_swap(parts, rng),
    "stopword_insertion": lambda parts, rate, rng, mask, words: stopword_insertion(parts, rate, rng, words),
    "punctuation_insertion": lambda parts, rate, rng, mask, words: punctuation_insertion(parts, rate, rng),
}


def augment(
    text: str,
    kind: str,
    rate: float,
    rng: np.random.Generator,
    mask_token: str = "[MASK]",
    unit: str = "words",
    stopwords: Sequence[str] = STOPWORDS,
) -> str:
    """One augmented view of ``text`` by the augmentation named ``kind``."""
    if kind not in TEXT_AUGMENTATIONS:
        raise ValueError(f"unknown text augmentation {kind!r}; use one of {', '.join(TEXT_AUGMENTATIONS)}")
    return join(TEXT_AUGMENTATIONS[kind](units(text, unit), rate, rng, mask_token, stopwords), unit)
