"""Text augmentations of the biomedical augmentation paper (Table 2) on small inputs: what each
changes, what it keeps, their bounds, characters for Chinese, and seeded, resumable draws."""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch

from clinsent.augment.text import (
    PUNCTUATION,
    STOPWORDS,
    augment,
    punctuation_insertion,
    random_crop,
    random_swap,
    stopword_insertion,
    word_deletion,
)
from clinsent.errors import InputError

WORDS = "During the 1970s initial clinical experience with bioprostheses determined their worldwide use".split()


def _is_subsequence(small: list[str], big: list[str]) -> bool:
    it = iter(big)
    return all(any(x == y for y in it) for x in small)


@pytest.mark.parametrize(("rate", "k"), [(0.1, 1), (0.2, 2), (0.3, 4), (0.99, 11)])  # round(rate x 12), at most 11
def test_random_crop_masks_one_contiguous_span(rate: float, k: int) -> None:
    for seed in range(5):
        out = random_crop(WORDS, rate, np.random.default_rng(seed), "[MASK]")
        masked = [i for i, w in enumerate(out) if w == "[MASK]"]
        assert len(out) == len(WORDS) and len(masked) == k
        assert masked == list(range(masked[0], masked[0] + len(masked)))  # contiguous
        assert [w for i, w in enumerate(out) if i not in masked] == [w for i, w in enumerate(WORDS) if i not in masked]
    assert random_crop(["one"], 0.5, np.random.default_rng(0), "[MASK]") == ["one"]  # never everything


def test_word_deletion_follows_its_draws_and_never_deletes_all() -> None:
    rng, check = np.random.default_rng(3), np.random.default_rng(3)
    out = word_deletion(WORDS, 0.3, rng)
    expected = [w for w, d in zip(WORDS, check.random(len(WORDS)) < 0.3, strict=True) if not d]
    assert out == expected and len(out) < len(WORDS)
    assert word_deletion(WORDS, 0.0, np.random.default_rng(0)) == WORDS
    for seed in range(10):
        assert len(word_deletion(WORDS, 0.9999, np.random.default_rng(seed))) == 1


def test_random_swap_exchanges_two_positions() -> None:
    for seed in range(10):
        out = random_swap(WORDS, np.random.default_rng(seed))
        diff = [i for i, (a, b) in enumerate(zip(out, WORDS, strict=True)) if a != b]
        assert len(diff) == 2 and out[diff[0]] == WORDS[diff[1]] and out[diff[1]] == WORDS[diff[0]]
    assert random_swap(["alone"], np.random.default_rng(0)) == ["alone"]


def test_insertions_keep_the_sentence_and_add_only_their_units() -> None:
    for seed in range(10):
        out = stopword_insertion(WORDS, 0.2, np.random.default_rng(seed))
        assert len(out) == len(WORDS) + round(0.2 * len(WORDS)) and _is_subsequence(WORDS, out)
        extra = list(out)
        for w in WORDS:
            extra.remove(w)
        assert all(w in STOPWORDS for w in extra)
        out = punctuation_insertion(WORDS, 0.3, np.random.default_rng(seed))
        marks = [w for w in out if w in PUNCTUATION]
        assert 1 <= len(marks) <= int(0.3 * len(WORDS) + 1) and _is_subsequence(WORDS, out)
        assert out[-1] == WORDS[-1]  # AEDA inserts before a word, never after the last
        assert len(out) == len(WORDS) + len(marks)
    assert stopword_insertion(["x"], 0.0, np.random.default_rng(0), stopwords=("and",)) in (["and", "x"], ["x", "and"])


def _aeda_port(words: list[str], rng: random.Random, punc_ratio: float = 0.3) -> list[str]:
    """AEDA's insert_punctuation_marks (Karimi et al. 2021, the authors' code), ported: the
    number of marks, the words they precede and each mark, drawn with Python's random."""
    marks = [".", ",", "!", "?", ";", ":"]
    q = rng.randint(1, int(punc_ratio * len(words) + 1))
    qs = rng.sample(range(0, len(words)), q)
    out = []
    for j, word in enumerate(words):
        if j in qs:
            out.append(marks[rng.randint(0, len(marks) - 1)])
        out.append(word)
    return out


def test_punctuation_insertion_has_aedas_distribution() -> None:
    """Chi-squared tests, ours against the port on the same 12-word sentence: the number of
    marks, the words they precede and the marks themselves."""
    from scipy.stats import chi2_contingency

    def profile(outs: list[list[str]]) -> tuple[list[int], list[int], list[int]]:
        counts, before, kinds = [0] * 5, [0] * len(WORDS), [0] * len(PUNCTUATION)
        for out in outs:
            marks = [i for i, w in enumerate(out) if w in PUNCTUATION]
            counts[len(marks)] += 1
            for shift, i in enumerate(marks):
                before[i - shift] += 1  # the index of the word the mark precedes
                kinds[PUNCTUATION.index(out[i])] += 1
        return counts, before, kinds

    rng, port_rng = np.random.default_rng(0), random.Random(0)
    ours = profile([punctuation_insertion(WORDS, 0.3, rng) for _ in range(4000)])
    theirs = profile([_aeda_port(WORDS, port_rng) for _ in range(4000)])
    assert ours[0][0] == theirs[0][0] == 0 and max(i for i, c in enumerate(theirs[0]) if c) == int(
        0.3 * len(WORDS) + 1
    )
    for a, b in zip(ours, theirs, strict=True):
        table = [[x for x, y in zip(a, b, strict=True) if x + y], [y for x, y in zip(a, b, strict=True) if x + y]]
        assert chi2_contingency(table)[1] > 1e-3, (a, b)


def _eda_random_deletion(words: list[str], p: float, rng: random.Random) -> list[str]:
    """EDA's random_deletion (Wei and Zou 2019, the authors' code), ported with Python's random."""
    if len(words) == 1:
        return words
    kept = [w for w in words if rng.uniform(0, 1) > p]
    return kept if kept else [words[rng.randint(0, len(words) - 1)]]


def _eda_random_swap(words: list[str], rng: random.Random) -> list[str]:
    """EDA's random_swap with one swap (its swap_word: up to three redraws of the second index,
    else the words come back unchanged), ported with Python's random."""
    out = list(words)
    i = rng.randint(0, len(out) - 1)
    j, counter = i, 0
    while j == i:
        j = rng.randint(0, len(out) - 1)
        counter += 1
        if counter > 3:
            return out
    out[i], out[j] = out[j], out[i]
    return out


def _same_distribution(ours: list[str], theirs: list[str]) -> None:
    from collections import Counter

    from scipy.stats import chi2_contingency

    a, b = Counter(ours), Counter(theirs)
    keys = sorted(set(a) | set(b))
    assert chi2_contingency([[a[k] for k in keys], [b[k] for k in keys]])[1] > 1e-3, (a, b)


def test_word_deletion_and_random_swap_have_edas_distribution() -> None:
    """Chi-squared tests, ours against ports of EDA's functions, over every outcome of a short
    text (four words for deletion at 0.5, all 16 subsets in play, the empty one replaced by a
    random word; three for the swap, where EDA's give-up after three draws is 1 in 27)."""
    four, three = ["a", "b", "c", "d"], ["x", "y", "z"]
    rng, port = np.random.default_rng(0), random.Random(0)
    n = 6000
    _same_distribution(
        [" ".join(word_deletion(four, 0.5, rng)) for _ in range(n)],
        [" ".join(_eda_random_deletion(four, 0.5, port)) for _ in range(n)],
    )
    ours = [" ".join(random_swap(three, rng)) for _ in range(n)]
    theirs = [" ".join(_eda_random_swap(three, port)) for _ in range(n)]
    _same_distribution(ours, theirs)
    assert abs(ours.count("x y z") / n - 1 / 27) < 0.015  # the unchanged share, as EDA's
    assert word_deletion(["alone"], 0.99, rng) == ["alone"] == _eda_random_deletion(["alone"], 0.99, port)


def test_characters_for_chinese_text_pass_through_utf8() -> None:
    text = "患者有高血压和糖尿病"
    out = augment(text, "punctuation_insertion", 0.3, np.random.default_rng(1), unit="characters")
    assert "".join(c for c in out if c not in PUNCTUATION) == text and " " not in out
    assert augment(text, "random_swap", 0.0, np.random.default_rng(1), unit="characters") != text
    assert sorted(augment(text, "random_swap", 0.0, np.random.default_rng(1), unit="characters")) == sorted(text)


def test_second_view_is_seeded_by_step(tiny_bert: object) -> None:
    """The SimCSE loss draws the second view from the step's generator: the same step gives the
    same view (a resumed job), another step another one; the first view is the sentence itself."""
    import pandas as pd

    from clinsent.models.base import load_transformer
    from clinsent.models.encoder import Encoder
    from clinsent.train.loop import step_generator

    from testkit.methods import resolve_method

    method = resolve_method(
        "m",
        {"objective": "simcse", "augmentation": "random_crop", "augmentation_rate": 0.3, "max_length": 32},
        {},
        [0],
    ).method
    t = load_transformer(str(tiny_bert), 32)
    loss = method.build_loss(Encoder(t.model, t.tokenizer, "first_last", 1, 32, torch.device("cpu")))
    rows = pd.DataFrame({"text": [" ".join(WORDS), "The patient has a history of heart failure and gout."]})
    a = loss.prepare(rows, step_generator(0, 5))
    b = loss.prepare(rows, step_generator(0, 5))
    c = loss.prepare(rows, step_generator(0, 6))
    assert torch.equal(a["doubled"]["input_ids"], b["doubled"]["input_ids"])
    assert not torch.equal(a["doubled"]["input_ids"], c["doubled"]["input_ids"])
    ids = a["doubled"]["input_ids"]
    mask_id = t.tokenizer.mask_token_id
    assert (ids[:2] != mask_id).all() and (ids[2:] == mask_id).sum(dim=1).tolist() == [4, 3]  # 30% of 12 and 10 words
    plain = t.tokenizer(rows["text"].tolist(), padding=True, return_tensors="pt")["input_ids"]
    assert torch.equal(ids[:2, : plain.shape[1]], plain)


def test_rate_outside_zero_one_is_a_config_error() -> None:
    from testkit.methods import resolve_method

    with pytest.raises(InputError, match=r"methods\.m\.augmentation_rate: 1\.0 is not valid"):
        resolve_method(
            "m", {"objective": "simcse", "augmentation": "word_deletion", "augmentation_rate": 1.0}, {}, [0]
        )
