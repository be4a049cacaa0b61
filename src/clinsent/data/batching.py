"""Batch plans for contrastive training, aware of duplicate entities (MED-SE section 3.2).

A plan fixes, for every training step, which sentences form the batch and which of each
sentence's defined entities is the chosen one (drawn at random per sentence per step).
Sentences are drawn without replacement from a per-epoch shuffle of the corpus, and a batch
never holds the same sentence twice (not even across an epoch boundary).

Strategies for sentences whose chosen entity already occurs in the batch:
- ``naive``: keep them;
- ``remove``: drop them (the batch shrinks);
- ``replace``: swap them for random S_ent sentences whose chosen entity is not yet in the
  batch, so no two sentences of a batch share the chosen entity and every batch is full.

Corpus mixes (MED-SE Table 4): with ``none_share`` > 0 every batch holds exactly
``round(none_share * batch_size)`` S_none sentences (drawn from their own per-epoch shuffle,
placed after the S_ent slots) and the rest from the main corpus (S_ent), to which the
duplicate strategy applies; replacements come from S_ent, so the share stays exact. With
``remove`` only the S_ent part shrinks. ``none_share`` 1.0 is a plan of S_none only.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pandas as pd

from clinsent.errors import InputError

STRATEGIES = ("naive", "remove", "replace")
CORPORA = ("s_all", "s_ent", "s_none")
PLAN_COLUMNS = ["step", "slot", "sent_id", "ent_idx", "term_id"]
NO_ENTITY = -1


@dataclass(frozen=True)
class Candidate:
    sent_id: int
    ent_idx: tuple[int, ...]
    term_ids: tuple[str, ...]


def candidates(sets: pd.DataFrame, linked: pd.DataFrame, corpus: str) -> list[Candidate]:
    """The corpus' sentences with their defined entities, in sent_id order."""
    if corpus not in CORPORA:
        raise InputError("config", f"unknown corpus {corpus!r}", f"use one of {', '.join(CORPORA)}")
    chosen = sets if corpus == "s_all" else sets[sets["set"] == corpus.removeprefix("s_")]
    defined = linked[linked["definition"].notna()].sort_values(["sent_id", "ent_idx"])
    by_sent: dict[int, tuple[list[int], list[str]]] = {}
    for sid, idx, term in zip(defined["sent_id"], defined["ent_idx"], defined["term_id"], strict=True):
        entry = by_sent.setdefault(int(sid), ([], []))
        entry[0].append(int(idx))
        entry[1].append(str(term))
    out = []
    for sid in sorted(int(s) for s in chosen["sent_id"]):
        idxs, terms = by_sent.get(sid, ([], []))
        out.append(Candidate(sid, tuple(idxs), tuple(terms)))
    return out


def set_columns(corpus: str, none_share: float) -> list[str]:
    """The columns of the sentence sets a batch plan reads: ``set`` only to draw from S_ent or
    S_none (a plan over S_all may read S_all gathered without the entity stage, which has no
    ``set`` column)."""
    return ["sent_id"] + (["set"] if corpus != "s_all" or none_share > 0 else [])


def no_entities() -> pd.DataFrame:
    """The linked-entity table of a corpus without entities (a plain sentence corpus)."""
    return pd.DataFrame(
        {
            "sent_id": pd.Series(dtype="int64"),
            "ent_idx": pd.Series(dtype="int32"),
            "term_id": pd.Series(dtype="object"),
            "definition": pd.Series(dtype="object"),
        }
    )


def _stream(n: int, rng: np.random.Generator) -> Iterator[int]:
    while True:
        yield from rng.permutation(n).tolist()


def _choose(c: Candidate, rng: np.random.Generator) -> tuple[int, str | None]:
    if not c.ent_idx:
        return NO_ENTITY, None
    k = int(rng.integers(len(c.ent_idx)))
    return c.ent_idx[k], c.term_ids[k]


def none_slots(batch_size: int, none_share: float) -> int:
    """The fixed number of S_none sentences per batch for a share (round half to even)."""
    if not 0.0 <= none_share <= 1.0:
        raise InputError("config", f"none_share={none_share}", "use a share between 0 and 1")
    return int(round(none_share * batch_size))


def plan_batches(
    cands: list[Candidate],
    strategy: str,
    batch_size: int,
    n_steps: int,
    seed: int,
    max_tries: int = 1000,
    none_cands: list[Candidate] | None = None,
    none_share: float = 0.0,
) -> pd.DataFrame:
    """A plan with one row per (step, slot); see the module docstring for the strategies and mixes."""
    k_none = none_slots(batch_size, none_share)
    if k_none:
        if not none_cands or len(none_cands) < k_none:
            raise InputError(
                "sentence sets",
                f"the mix needs {k_none} S_none sentences per batch, S_none has {len(none_cands or [])}",
                "lower `none_share` or use more notes",
            )
        if k_none == batch_size:
            return plan_batches(none_cands, "naive", batch_size, n_steps, seed, max_tries)
    if strategy not in STRATEGIES:
        raise InputError("config", f"unknown duplicate strategy {strategy!r}", f"use one of {', '.join(STRATEGIES)}")
    if not cands:
        raise InputError(
            "sentence sets",
            "the training corpus is empty",
            "check the notes, the NER output and `min_words`; or choose corpus s_all",
        )
    if batch_size < 1 or n_steps < 0:
        raise InputError("config", f"batch_size={batch_size}, steps={n_steps}", "use batch_size >= 1 and steps >= 0")
    if len(cands) < batch_size - k_none:
        raise InputError(
            "sentence sets",
            f"the training corpus has {len(cands)} sentences, fewer than a batch of {batch_size - k_none}",
            "lower `training.batch_size` or use more notes",
        )
    rng = np.random.default_rng(seed)
    with_entity = [c for c in cands if c.ent_idx]
    order = _stream(len(cands), rng)
    none_order = _stream(len(none_cands), np.random.default_rng([seed, 1])) if k_none and none_cands else None
    rows: list[tuple[int, int, int, int, str | None]] = []
    for step in range(n_steps):
        batch: list[tuple[int, int, str | None]] = []
        used: set[str] = set()
        in_batch: set[int] = set()
        for _ in range(batch_size - k_none):
            c = cands[next(order)]
            while c.sent_id in in_batch:  # across an epoch boundary: never the same sentence twice
                c = cands[next(order)]
            ent, term = _choose(c, rng)
            if term is not None and term in used:
                if strategy == "remove":
                    continue
                if strategy == "replace":
                    c, ent, term = _replacement(with_entity, cands, used, in_batch, rng, max_tries)
            batch.append((c.sent_id, ent, term))
            in_batch.add(c.sent_id)
            if term is not None:
                used.add(term)
        if none_order is not None and none_cands:
            picked = {next(none_order) for _ in range(k_none)}
            while len(picked) < k_none:  # across an epoch boundary
                picked.add(next(none_order))
            batch.extend((none_cands[i].sent_id, NO_ENTITY, None) for i in sorted(picked))
        rows.extend((step, slot, sid, ent, term) for slot, (sid, ent, term) in enumerate(batch))
    df = pd.DataFrame(rows, columns=PLAN_COLUMNS)
    return df.astype({"step": "int32", "slot": "int32", "sent_id": "int64", "ent_idx": "int32"})


def _replacement(
    with_entity: list[Candidate],
    cands: list[Candidate],
    used: set[str],
    in_batch: set[int],
    rng: np.random.Generator,
    max_tries: int,
) -> tuple[Candidate, int, str | None]:
    """A random sentence not yet in the batch, with a chosen entity not yet in the batch."""
    pool = with_entity if with_entity else cands
    for _ in range(max_tries):
        c = pool[int(rng.integers(len(pool)))]
        if c.sent_id in in_batch:
            continue
        free = [k for k, t in enumerate(c.term_ids) if t not in used]
        if free:
            k = free[int(rng.integers(len(free)))]
            return c, c.ent_idx[k], c.term_ids[k]
    plain = [c for c in cands if not c.ent_idx and c.sent_id not in in_batch]
    if plain:
        c = plain[int(rng.integers(len(plain)))]
        return c, NO_ENTITY, None
    raise InputError(
        "sentence sets",
        f"no sentence with an unused entity after {max_tries} draws",
        "lower `training.batch_size` or use a larger corpus",
    )


def duplicate_stats(cands: list[Candidate], batch_size: int, n_batches: int, seed: int) -> dict[str, float]:
    """Simulate naive batches on S_ent: share with >= 1 duplicate chosen entity, mean share of unique entities.

    Only sentences with a defined entity take part (the paper simulated one million batches
    of 32 on S_ent). Batches are consecutive slices of per-epoch shuffles (the tail of an
    epoch that does not fill a batch is skipped, so a batch never repeats a sentence) and
    each sentence's entity is drawn at random among its defined ones, as in a naive plan.
    Vectorised: a million batches of 32 take seconds.
    """
    ents = [c for c in cands if c.ent_idx]
    nan = float("nan")
    if len(ents) < batch_size or n_batches <= 0:
        return {
            "batches": 0,
            "batch_size": batch_size,
            "sentences": len(ents),
            "share_with_duplicate": nan,
            "mean_unique_share": nan,
            "mean_unique_entities": nan,
        }
    vocab: dict[str, int] = {}
    counts = np.array([len(c.term_ids) for c in ents], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(counts)[:-1]])
    codes = np.array([vocab.setdefault(t, len(vocab)) for c in ents for t in c.term_ids], dtype=np.int64)
    rng = np.random.default_rng(seed)
    per_epoch = len(ents) // batch_size
    done = with_dup = 0
    unique_total = 0
    while done < n_batches:
        batches = rng.permutation(len(ents))[: per_epoch * batch_size].reshape(per_epoch, batch_size)
        batches = batches[: n_batches - done]
        pick = (rng.random(batches.shape) * counts[batches]).astype(np.int64)
        chosen = np.sort(codes[offsets[batches] + pick], axis=1)
        n_unique = 1 + (np.diff(chosen, axis=1) != 0).sum(axis=1)
        with_dup += int((n_unique < batch_size).sum())
        unique_total += int(n_unique.sum())
        done += len(batches)
    return {
        "batches": int(n_batches),
        "batch_size": int(batch_size),
        "sentences": len(ents),
        "share_with_duplicate": with_dup / n_batches,
        "mean_unique_share": unique_total / (n_batches * batch_size),
        "mean_unique_entities": unique_total / n_batches,
    }
