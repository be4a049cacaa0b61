"""CoNLL-style token files and entity-level scores (the healthcare-LM paper's Table 10: i2b2
2010, 2012 and 2014 NER as token classification, after the usual conversion of the i2b2/n2c2
releases to one token per line).

Files: one token per line, whitespace-separated columns, the token first and its BIO tag last
(``B-problem``, ``I-problem``, ``O``; IOB1 files are read as they are), a blank line between
sentences, ``-DOCSTART-`` lines skipped. A tag that is not O, B-<type> or I-<type> stops the read
with file:line (never the token).

Scores are entity-level and micro-averaged with exact span match, as seqeval's default mode
and conlleval count them: an entity starts at B-<type>, or at I-<type> after O or another type,
and runs over the following I-<type> tags; a predicted entity counts only when its type, start
and end all match a gold one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from clinsent.errors import InputError
from clinsent.evaluation.bootstrap import Items
from clinsent.io.textfile import text_lines


@dataclass(frozen=True)
class TaggedSentence:
    tokens: list[str]
    tags: list[str]
    line: int  # 1-based line of the first token


def _valid(tag: str) -> bool:
    return tag == "O" or (len(tag) > 2 and tag[:2] in ("B-", "I-"))


def read_conll(path: str | Path) -> list[TaggedSentence]:
    path = Path(path)
    if not path.exists():
        raise InputError(path, "file not found", "point the eval set at the CoNLL-style file")
    out: list[TaggedSentence] = []
    tokens: list[str] = []
    tags: list[str] = []
    first = 0
    bad: list[int] = []
    width, uneven = 0, []  # the columns of the first token line; lines with another count
    for n, line in enumerate(text_lines(path), 1):  # UTF-8 strictly (clinsent.io.textfile), never U+FFFD
        cols = line.split()
        if not cols or cols[0] == "-DOCSTART-":
            if tokens:
                out.append(TaggedSentence(tokens, tags, first))
            tokens, tags = [], []
            continue
        if len(cols) < 2 or not _valid(cols[-1]):
            bad.append(n)
            continue
        width = width or len(cols)
        if len(cols) != width:  # e.g. a tab or space inside a token, which would lose its second half
            uneven.append(n)
            continue
        if not tokens:
            first = n
        tokens.append(cols[0])
        tags.append(cols[-1])
    if tokens:
        out.append(TaggedSentence(tokens, tags, first))
    if bad:
        raise InputError(
            path,
            f"{len(bad)} line(s) without a token and a BIO tag (O, B-<type>, I-<type>) last (lines {bad[:10]})",
            "convert the file to one token per line, its tag in the last column",
        )
    if uneven:
        raise InputError(
            path,
            f"{len(uneven)} line(s) with another number of columns than the first token line's "
            f"{width} (lines {uneven[:10]}) (a space or tab inside a token)",
            "give every line the same columns; a token holds no space or tab",
        )
    if not out:
        raise InputError(
            path, "no tagged sentence", "check the file (one token per line, blank lines between sentences)"
        )
    return out


def entities(tags: Sequence[str]) -> set[tuple[str, int, int]]:
    """(type, first token, last token + 1) of each entity in one sentence's tags."""
    out = set()
    start, kind = -1, ""
    for i, tag in enumerate([*tags, "O"]):
        prefix, _, t = tag.partition("-")
        continues = prefix == "I" and t == kind and start >= 0
        if start >= 0 and not continues:
            out.add((kind, start, i))
            start, kind = -1, ""
        if prefix in ("B", "I") and not continues:
            start, kind = i, t
    return out


def entity_counts(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]]) -> np.ndarray:
    """Per sentence: (entities right, entities predicted, gold entities), shape (n, 3)."""
    out = np.zeros((len(gold), 3), dtype=np.int64)
    for i, (g, p) in enumerate(zip(gold, pred, strict=True)):
        eg, ep = entities(g), entities(p)
        out[i] = len(eg & ep), len(ep), len(eg)
    return out


def _micro(tp: np.ndarray, n_pred: np.ndarray, n_gold: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Micro precision, recall and F1 from summed counts (0 where undefined, as seqeval)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        precision = np.where(n_pred > 0, tp / np.maximum(n_pred, 1), 0.0)
        recall = np.where(n_gold > 0, tp / np.maximum(n_gold, 1), 0.0)
        total = precision + recall
        f1 = np.where(total > 0, 2 * precision * recall / np.where(total > 0, total, 1), 0.0)
    return precision, recall, f1


def entity_scores(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]]) -> dict[str, float]:
    """Micro precision, recall and F1 over every sentence's entities (exact type and span)."""
    tp, n_pred, n_gold = entity_counts(gold, pred).sum(axis=0)
    precision, recall, f1 = (float(x) for x in _micro(tp, n_pred, n_gold))
    return {"f1_micro": f1, "precision_micro": precision, "recall_micro": recall, "entities": float(n_gold)}


def entity_items(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]]) -> Items:
    """The test sentences, each with its counts of right, predicted and gold entities (the
    tagger held fixed): micro F1, precision and recall of each resample of sentences (the
    counts add up over sentences, so a resample's scores are those of its summed counts)."""
    counts = entity_counts(gold, pred)

    def statistic(idx: np.ndarray) -> np.ndarray:
        tp, n_pred, n_gold = (counts[:, k][idx].sum(axis=-1) for k in range(3))
        precision, recall, f1 = _micro(tp, n_pred, n_gold)
        return np.stack([f1, precision, recall])

    return Items(len(counts), ("f1_micro", "precision_micro", "recall_micro"), statistic, "test sentences")
