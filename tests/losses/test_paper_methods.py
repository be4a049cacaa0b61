"""The MED-SE paper's methods and knobs: entity encoders, CT, ConSERT augmentations, whitening,
BERT-flow, perturbations, corpus mixes, training-only MLP."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from clinsent.augment.consert import EmbeddingCutoff, cutoff_rows, shuffled_position_ids
from clinsent.data.batching import Candidate, none_slots, plan_batches
from clinsent.losses.ct import ct_logits, ct_loss, ct_pairs
from clinsent.losses.medse import derangement, random_token_mask
from clinsent.models.entity_encoder import ENTITY_ENCODERS, entity_encoder
from clinsent.postprocess.flow import Flow, fit_flow, flow_transform
from clinsent.postprocess.whitening import fit_whitening


def _states(n: int = 3, t: int = 7, d: int = 8) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    torch.manual_seed(0)
    states = torch.randn(n, t, d)
    span = torch.zeros(n, t, dtype=torch.bool)
    span[0, 2:4] = True
    span[1, 1] = True
    span[2, 3:6] = True
    attn = torch.ones(n, t, dtype=torch.long)
    attn[1, 5:] = 0
    return states, span, attn


@pytest.mark.parametrize("kind", ENTITY_ENCODERS)
def test_entity_encoders_context(kind: str) -> None:
    """Span-only encoders ignore tokens outside the span; cross-attention reads the sentence."""
    states, span, attn = _states()
    enc = entity_encoder(kind, 8, heads=2).eval()
    out = enc(states, span, attn)
    assert out.shape == (3, 8) and torch.isfinite(out).all()
    changed = states.clone()
    changed[0, 0] += 5.0  # a token outside row 0's span
    out2 = enc(changed, span, attn)
    assert torch.allclose(out[1:], out2[1:])
    assert torch.allclose(out[0], out2[0]) == (kind != "cross_attention")
    if kind == "mean":
        assert torch.allclose(out[2], states[2, 3:6].mean(dim=0))
    if kind == "cross_attention":  # padded tokens are never attended
        padded = states.clone()
        padded[1, 6] += 5.0
        assert torch.allclose(enc(padded, span, attn)[1], out[1], atol=1e-6)


def test_ct_pairs_groups_and_labels() -> None:
    texts = [f"s{i}" for i in range(32)]
    first, second, labels = ct_pairs(texts, np.random.default_rng(0))
    assert len(first) == len(second) == len(labels) == 32
    assert labels.tolist() == ([1.0] + [0.0] * 7) * 4
    for i, (a, b) in enumerate(zip(first, second, strict=True)):
        assert (a == b) == bool(labels[i])  # identical only for the positive of each group
    for g in range(4):  # same sentences per group, different order for the two models
        assert (
            sorted(first[8 * g : 8 * g + 8]) == sorted(second[8 * g : 8 * g + 8]) == sorted(texts[8 * g : 8 * g + 8])
        )


def test_ct_loss_is_bce_on_dot_products() -> None:
    e1 = torch.tensor([[1.0, 2.0], [0.5, -1.0], [0.0, 3.0]])
    e2 = torch.tensor([[1.0, 1.0], [2.0, 0.0], [1.0, -1.0]])
    labels = torch.tensor([1.0, 0.0, 0.0])
    logits = ct_logits(e1, e2)
    assert logits.shape == (3,) and logits.tolist() == [3.0, 1.0, -3.0]
    manual = (
        -(np.log(1 / (1 + np.exp(-3.0))) + np.log(1 - 1 / (1 + np.exp(-1.0))) + np.log(1 - 1 / (1 + np.exp(3.0)))) / 3
    )
    assert ct_loss(e1, e2, labels).item() == pytest.approx(manual, rel=1e-6)


def test_token_cutoff_zeroes_only_chosen_real_rows() -> None:
    attn = torch.tensor([[1] * 10 + [0] * 2, [1] * 5 + [0] * 7])
    rows = cutoff_rows(attn, 0.3, torch.Generator().manual_seed(0))
    assert rows.sum(dim=1).tolist() == [3, 1]  # int(L * rate), specials included
    assert not rows[attn == 0].any()

    class Toy(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embeddings = torch.nn.Embedding(20, 4)

        def forward(self, ids: torch.Tensor) -> torch.Tensor:
            return self.embeddings(ids)

    toy = Toy()
    ids = torch.arange(12).repeat(2, 1)
    plain = toy(ids)
    cutoff = EmbeddingCutoff(toy)
    assert torch.equal(toy(ids), plain)  # no rows set: the embeddings as they are
    with cutoff.applied(rows):
        cut = toy(ids)
    assert (cut[rows] == 0).all() and torch.equal(cut[~rows], plain[~rows])
    assert torch.equal(toy(ids), plain)  # rows unset after the block


def test_token_shuffle_permutes_real_positions_only() -> None:
    attn = torch.tensor([[1] * 9 + [0] * 3, [1] * 4 + [0] * 8])
    pos = shuffled_position_ids(attn, torch.Generator().manual_seed(1))
    for row, length in zip(pos, [9, 4], strict=True):
        assert sorted(row[:length].tolist()) == list(range(length))
        assert row[length:].tolist() == list(range(length, 12))
    assert not torch.equal(pos[0, :9], torch.arange(9))


def test_whitening_matches_direct_numpy() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 6)) @ rng.normal(size=(6, 6)) + 3.0
    w = fit_whitening(x)
    mu = x.mean(axis=0)
    cov = np.cov(x.T)
    u, s, _ = np.linalg.svd(cov)
    direct = (x - mu) @ (u @ np.diag(1 / np.sqrt(s)))
    np.testing.assert_allclose(w.transform(x), direct, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(np.cov(w.transform(x).T), np.eye(6), atol=1e-8)
    assert w.transform(x).shape == (200, 6) and fit_whitening(x, k=3).transform(x).shape == (200, 3)
    few = rng.normal(size=(4, 6))  # fewer sentences than dimensions: null directions are dropped
    assert fit_whitening(few).transform(few).shape == (4, 3)


def test_flow_logdet_matches_jacobian_and_fitting_lowers_nll() -> None:
    torch.manual_seed(0)
    flow = Flow(6, levels=2, depth=2, width=8)
    x = torch.randn(16, 6) * 2 + 1
    flow(x)  # initialise ActNorm
    for p in flow.parameters():  # non-trivial couplings
        p.data.add_(0.1 * torch.randn_like(p))
    _, logdet = flow(x[:1])
    jac = torch.autograd.functional.jacobian(lambda v: flow(v)[0], x[:1]).reshape(6, 6)
    assert logdet.item() == pytest.approx(torch.linalg.slogdet(jac)[1].item(), abs=1e-4)
    rng = np.random.default_rng(0)
    a = rng.normal(size=(512, 4))
    data = np.concatenate([a, a**2 + 0.1 * rng.normal(size=(512, 4))], axis=1)  # dependent, non-Gaussian
    fitted, losses = fit_flow(data, seed=0, epochs=20, width=16)
    assert np.mean(losses[-16:]) < np.mean(losses[:16]) - 0.2
    z = flow_transform(fitted, data)
    assert z.shape == data.shape and abs(z.mean()) < 0.5


def test_perturbation_helpers() -> None:
    gen = torch.Generator().manual_seed(0)
    counts, lengths = np.array([3, 1, 9]), np.array([10, 6, 5])  # the last asks more than its 3 inner tokens
    rnd = random_token_mask(counts, lengths, 10, gen, cap=32)
    assert rnd.sum(axis=1).tolist() == [3, 1, 3]
    assert not rnd[:, 0].any() and not rnd[0, 9] and not rnd[1, 5:].any()  # never [CLS], [SEP] or padding
    # drawn over the cap: a batch padded further draws the same positions
    wide = random_token_mask(counts, lengths, 16, torch.Generator().manual_seed(0), cap=32)
    assert (wide[:, :10] == rnd).all() and not wide[:, 10:].any()
    for n in (2, 3, 7, 32):
        perm = derangement(n, gen)
        assert sorted(perm.tolist()) == list(range(n)) and (perm != torch.arange(n)).all()


@pytest.mark.parametrize("share", [0.0, 0.03, 0.06, 0.10, 0.25, 0.50, 0.75, 1.0])
def test_mix_share_is_exact_per_batch(share: float) -> None:
    ent = [Candidate(i, (0,), (f"T{i % 50}",)) for i in range(200)]
    none = [Candidate(1000 + i, (), ()) for i in range(100)]
    plan = plan_batches(ent, "replace", 32, 30, seed=2, none_cands=none, none_share=share)
    k = none_slots(32, share)
    assert k == round(share * 32)
    per_batch = plan.assign(is_none=plan["sent_id"] >= 1000).groupby("step")["is_none"].sum()
    assert (per_batch == k).all() and (plan.groupby("step").size() == 32).all()
    assert not plan.groupby("step")["sent_id"].apply(lambda s: s.duplicated().any()).any()
    terms = plan.dropna(subset=["term_id"]).groupby("step")["term_id"]
    assert not terms.apply(lambda s: s.duplicated().any()).any()  # replace still applies to S_ent


def test_info_nce_matches_definition_for_ct_and_simcse_shapes() -> None:
    from clinsent.losses.contrastive import info_nce

    a, b = torch.randn(5, 4), torch.randn(5, 4)
    logits = F.normalize(a, dim=-1) @ F.normalize(b, dim=-1).T / 0.05
    assert info_nce(a, b, 0.05).item() == pytest.approx(F.cross_entropy(logits, torch.arange(5)).item(), rel=1e-6)


def test_full_whitening_of_fewer_vectors_than_dimensions_is_degenerate_and_k_fixes_it() -> None:
    """Why ``whitening_dims`` exists: n < d whitened vectors are mutually orthogonal."""
    from clinsent.postprocess.apply import postprocess

    x = np.random.default_rng(1).normal(size=(20, 64)) + 1.0
    full = postprocess(x, "whitening")
    cos = full @ full.T / np.outer(np.linalg.norm(full, axis=1), np.linalg.norm(full, axis=1))
    assert np.allclose(cos[~np.eye(20, dtype=bool)], -1 / 19, atol=1e-6)  # centred, equal-norm simplex
    low = postprocess(x, "whitening", whitening_dims=5)
    assert low.shape == (20, 5)
