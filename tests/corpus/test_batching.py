"""Batch-plan invariants for the naive, remove and replace strategies."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from clinsent.data.batching import Candidate, candidates, duplicate_stats, plan_batches
from clinsent.errors import InputError


def _cands(n: int = 60, n_terms: int = 9, plain: int = 10) -> list[Candidate]:
    # every sentence has two entities from a small vocabulary: duplicates are frequent
    out = [Candidate(i, (0, 1), (f"T{i % n_terms}", f"T{(i * 5 + 1) % n_terms}")) for i in range(n)]
    return out + [Candidate(1000 + i, (), ()) for i in range(plain)]


def _dups(plan: pd.DataFrame) -> pd.Series:
    return plan.dropna(subset=["term_id"]).groupby("step")["term_id"].apply(lambda s: s.duplicated().any())


def test_naive_is_full_and_has_duplicates() -> None:
    plan = plan_batches(_cands(), "naive", 8, 50, seed=1)
    assert (plan.groupby("step").size() == 8).all()
    assert not plan.groupby("step")["sent_id"].apply(lambda s: s.duplicated().any()).any()
    assert _dups(plan).any()


def test_remove_has_no_duplicates_and_shrinks() -> None:
    plan = plan_batches(_cands(), "remove", 8, 50, seed=1)
    sizes = plan.groupby("step").size()
    assert not _dups(plan).any()
    assert (sizes <= 8).all() and (sizes < 8).any()


def test_replace_has_distinct_entities_and_constant_size() -> None:
    plan = plan_batches(_cands(), "replace", 8, 50, seed=1)
    assert (plan.groupby("step").size() == 8).all()
    assert not _dups(plan).any()
    assert not plan.groupby("step")["sent_id"].apply(lambda s: s.duplicated().any()).any()  # no sentence twice
    assert plan["step"].nunique() == 50


def test_chosen_entity_belongs_to_its_sentence() -> None:
    cands = {c.sent_id: c for c in _cands()}
    plan = plan_batches(list(cands.values()), "replace", 8, 20, seed=3)
    for sid, ent, term in zip(plan["sent_id"], plan["ent_idx"], plan["term_id"], strict=True):
        c = cands[sid]
        if ent == -1:
            assert term is None and not c.ent_idx
        else:
            assert c.term_ids[c.ent_idx.index(ent)] == term


def test_seeded_and_seed_sensitive() -> None:
    a = plan_batches(_cands(), "replace", 8, 10, seed=5)
    b = plan_batches(_cands(), "replace", 8, 10, seed=5)
    c = plan_batches(_cands(), "replace", 8, 10, seed=6)
    pd.testing.assert_frame_equal(a, b)
    assert not a.equals(c)


def test_replace_impossible_is_a_clear_error() -> None:
    cands = [Candidate(i, (0,), (f"T{i % 3}",)) for i in range(20)]
    with pytest.raises(InputError, match="batch_size"):
        plan_batches(cands, "replace", 5, 2, seed=0, max_tries=50)
    with pytest.raises(InputError, match="fewer than a batch"):
        plan_batches(cands[:3], "naive", 5, 2, seed=0)


def test_duplicate_stats() -> None:
    stats = duplicate_stats(_cands(), 8, 400, seed=0)
    assert stats["batches"] == 400
    assert 0.5 < stats["share_with_duplicate"] <= 1.0
    assert 0.0 < stats["mean_unique_share"] < 1.0
    one_term = [Candidate(i, (0,), ("T",)) for i in range(10)]
    assert duplicate_stats(one_term, 4, 10, seed=0)["mean_unique_share"] == pytest.approx(0.25)


def test_candidates_from_tables() -> None:
    sets = pd.DataFrame({"sent_id": [1, 2, 3], "set": ["ent", "none", "nodef"]})
    linked = pd.DataFrame(
        {"sent_id": [1, 1, 3], "ent_idx": [0, 1, 0], "term_id": ["A", "B", None], "definition": ["d", None, None]}
    )
    assert candidates(sets, linked, "s_ent") == [Candidate(1, (0,), ("A",))]
    assert [c.sent_id for c in candidates(sets, linked, "s_all")] == [1, 2, 3]


def test_duplicate_simulation_matches_the_exact_probability() -> None:
    # 1000 sentences, 100 entities with 10 sentences each; a batch of 8 distinct sentences has no
    # duplicate entity with probability prod_i (n - i*k) / (n - i), k = 10 sentences per entity.
    n, k, b = 1000, 10, 8
    cands = [Candidate(i, (0,), (f"T{i % (n // k)}",)) for i in range(n)]
    p_clean = float(np.prod([(n - i * k) / (n - i) for i in range(b)]))
    stats = duplicate_stats(cands, b, 40_000, seed=1)
    assert stats["share_with_duplicate"] == pytest.approx(1 - p_clean, abs=0.01)
    assert stats["mean_unique_entities"] == pytest.approx(stats["mean_unique_share"] * b)
    # a sentence's entity is drawn among its own: two sentences that both mention A and B collide half the time
    two = [Candidate(0, (0, 1), ("A", "B")), Candidate(1, (0, 1), ("A", "B"))]
    assert duplicate_stats(two, 2, 20_000, seed=2)["share_with_duplicate"] == pytest.approx(0.5, abs=0.02)


def test_entity_is_drawn_per_sentence_per_step() -> None:
    """A sentence with two defined entities gets either one, afresh each time it is drawn."""
    cands = [Candidate(i, (0, 1), (f"A{i}", f"B{i}")) for i in range(8)]
    plan = plan_batches(cands, "naive", 4, 40, seed=0)
    per_sentence = plan.groupby("sent_id")["ent_idx"].agg(lambda s: set(s.tolist()))
    assert (per_sentence.apply(len) == 2).all()


def test_s_none_only_plan_and_plan_keys() -> None:
    from clinsent.data.plan import SentencePlan

    none = [Candidate(100 + i, (), ()) for i in range(20)]
    plan = plan_batches([], "replace", 8, 5, seed=0, none_cands=none, none_share=1.0)
    assert (plan["sent_id"] >= 100).all() and (plan["ent_idx"] == -1).all() and len(plan) == 40
    only_none = SentencePlan("s_ent", "replace", 1.0, 32, 2000)
    assert only_none.key() == "s_none-naive-none0-b32-n2000"
    assert only_none.params() == {
        "corpus": "s_none",
        "duplicates": "naive",
        "none_share": 0.0,
        "batch_size": 32,
        "steps": 2000,
        "source": "notes",
        "fraction": 1.0,
    }
    from clinsent.config.declare import build

    assert build(SentencePlan, only_none.params()) == only_none.shape()  # the job reads its params back typed
    assert only_none.shape().key() == only_none.key()
    corpus = SentencePlan("s_all", "naive", 0.0, 128, 7813, source="pubmed", fraction=0.01)
    assert corpus.key() == "pubmed-naive-none0-b128-n7813-f0.01"
    assert corpus.inputs({"results": "r", "sets": "r/sets.parquet", "linked": "r/l.parquet"}, 3) == {
        "plan": "r/batches/pubmed-naive-none0-b128-n7813-f0.01/seed3.parquet",
        "sets": "r/sentence_corpora/pubmed/sentences.parquet",
    }
    mix = SentencePlan("s_ent", "replace", 0.1, 32, 2000, entities=True)
    assert mix.key() == "s_ent-replace-none0.1-b32-n2000"  # the entities flag does not shape the plan


def test_s_all_without_the_entity_stage_keeps_the_first_epoch() -> None:
    """SimCSE's plan over S_all gathered without NER (no ``set`` column, no entities) picks the same
    sentences in the same slots as over the full sets for the whole first epoch: the order is one
    permutation drawn before any entity; only later epochs see the entity draws' other stream."""
    from clinsent.data.batching import no_entities, set_columns

    rng = np.random.default_rng(5)
    sets = pd.DataFrame({"sent_id": np.arange(100, 160), "set": rng.choice(["ent", "none", "nodef"], 60)})
    ent = sets[sets["set"] == "ent"]
    linked = pd.DataFrame(
        {
            "sent_id": np.repeat(ent["sent_id"].to_numpy(), 2),
            "ent_idx": np.tile([0, 1], len(ent)),
            "term_id": [f"T{i % 7}" for i in range(2 * len(ent))],
            "definition": "d",
        }
    )
    assert set_columns("s_all", 0.0) == ["sent_id"] and set_columns("s_ent", 0.0) == ["sent_id", "set"]
    assert set_columns("s_all", 0.1) == ["sent_id", "set"]
    with_entities = plan_batches(candidates(sets, linked, "s_all"), "naive", 8, 7, seed=3)
    alone = plan_batches(candidates(sets[set_columns("s_all", 0.0)], no_entities(), "s_all"), "naive", 8, 7, seed=3)
    assert alone["sent_id"].tolist() == with_entities["sent_id"].tolist()  # 7 x 8 = 56 of 60 sentences
    assert (alone["ent_idx"] == -1).all() and (with_entities["ent_idx"] >= 0).any()
