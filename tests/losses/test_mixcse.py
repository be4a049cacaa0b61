"""MixCSE's mixed negatives (the reference code's blocks and zeroed entries) and instance
weighting, against hand computations on tiny inputs."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from clinsent.config.sections import RunConfig
from clinsent.errors import InputError
from clinsent.losses.mixcse import instance_weights, mixed_blocks, weighted_cross_entropy


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))


def _hand_logits(z1: np.ndarray, z2: np.ndarray, tau: float, lam: float) -> np.ndarray:
    n = len(z1)
    out = np.zeros((n, 3 * n))
    for i in range(n):
        for j in range(n):
            out[i, j] = _cos(z1[i], z2[j]) / tau
            m = lam * z2[j] + (1 - lam) * z2[(j + 1) % n]
            out[i, n + j] = 0.0 if j == (i - 1) % n else _cos(z1[i], m) / tau
            a = lam * z1[i] + (1 - lam) * z1[(i + 1) % n]
            out[i, 2 * n + j] = 0.0 if j == (i + 1) % n else _cos(a, z2[j]) / tau
    return out


def _hand_loss(logits: np.ndarray, keep: np.ndarray | None = None) -> float:
    keep = np.ones_like(logits, dtype=bool) if keep is None else keep
    total = 0.0
    for i in range(len(logits)):
        denom = sum(math.exp(v) for v, k in zip(logits[i], keep[i], strict=True) if k)
        total += -(logits[i, i] - math.log(denom))
    return total / len(logits)


def test_mixed_blocks_match_the_reference_form() -> None:
    g = torch.Generator().manual_seed(0)
    z1, z2 = torch.randn(5, 4, generator=g), torch.randn(5, 4, generator=g)
    blocks = mixed_blocks(z1, z2, 0.05, 0.2)
    from clinsent.losses.contrastive import cosine_logits

    got = torch.cat([cosine_logits(z1, z2, 0.05), *blocks], dim=1).numpy()
    hand = _hand_logits(z1.numpy(), z2.numpy(), 0.05, 0.2)
    assert np.allclose(got, hand, atol=1e-4)
    assert all(got[i, 5 + (i - 1) % 5] == 0 and got[i, 10 + (i + 1) % 5] == 0 for i in range(5))  # zeroed, kept
    loss = weighted_cross_entropy([cosine_logits(z1, z2, 0.05), *blocks])
    assert loss.item() == pytest.approx(_hand_loss(hand), rel=1e-5)


def test_mixed_negatives_are_detached() -> None:
    z1 = torch.randn(4, 3, requires_grad=True)
    z2 = torch.randn(4, 3, requires_grad=True)
    block1, block2 = mixed_blocks(z1, z2, 0.05, 0.2)
    (g1,) = torch.autograd.grad(block1.sum(), z2, allow_unused=True)
    assert g1 is None  # block 1 reaches z2 only through the detached mix
    (g2,) = torch.autograd.grad(block2.sum(), z1, allow_unused=True)
    assert g2 is None


def test_instance_weights_and_weighted_loss() -> None:
    c = torch.tensor([[1.0, 0.0], [0.99, 0.14], [0.0, 1.0]])  # sentences 0 and 1 nearly the same
    alpha = instance_weights(c, phi=0.9)
    assert alpha.tolist() == [[1, 0, 1], [0, 1, 1], [1, 1, 1]]
    g = torch.Generator().manual_seed(1)
    z1, z2 = torch.randn(3, 4, generator=g), torch.randn(3, 4, generator=g)
    from clinsent.losses.contrastive import cosine_logits

    s = cosine_logits(z1, z2, 0.05)
    got = weighted_cross_entropy([s], [alpha]).item()
    assert got == pytest.approx(_hand_loss(s.numpy(), alpha.numpy().astype(bool)), rel=1e-5)
    close = torch.tensor([[1.0, 2.0, 0.5], [2.0, 1.0, 0.5], [0.5, 0.5, 1.0]])  # 0 and 1 look alike
    assert weighted_cross_entropy([close], [alpha]).item() < weighted_cross_entropy([close]).item() - 0.5


def test_method_settings_and_rows() -> None:
    from testkit.methods import resolve_method

    with pytest.raises(InputError, match="mixing and instance_weighting are both off"):
        resolve_method("m", {"objective": "mixcse", "mixing": False, "instance_weighting": False}, {}, [0])
    m = resolve_method(
        "pm", {"objective": "mixcse", "augmentation": "punctuation_insertion", "augmentation_rate": 0.3}, {}, [0]
    ).method
    assert m.settings.pooling == "cls" and m.settings.phi == 0.9 and m.settings.mix_lambda == 0.2


def test_paper_eq3_block_against_a_port() -> None:
    """MixCSE's eq. 3, written out: for anchor i and negative j != i, m_ij = lam z2_i + (1 - lam) z2_j;
    the softmax of anchor i holds S_i and every cos(z1_i, m_ij) / tau, nothing for j = i."""
    from clinsent.losses.contrastive import cosine_logits
    from clinsent.losses.mixcse import paper_form

    g = torch.Generator().manual_seed(2)
    z1, z2 = torch.randn(5, 4, generator=g), torch.randn(5, 4, generator=g)
    a, b, tau, lam = z1.numpy(), z2.numpy(), 0.05, 0.2
    n = len(a)
    hand = np.zeros((n, 2 * n))
    keep = np.ones((n, 2 * n), dtype=bool)
    for i in range(n):
        for j in range(n):
            hand[i, j] = _cos(a[i], b[j]) / tau
            hand[i, n + j] = _cos(a[i], lam * b[i] + (1 - lam) * b[j]) / tau
        keep[i, n + i] = False  # m_ii is the positive itself
    ones = torch.ones(n, n)
    ((block, weight),) = paper_form(z1, z2, tau, lam, False, ones)
    assert np.allclose(block.numpy()[~np.eye(n, dtype=bool)], hand[:, n:][~np.eye(n, dtype=bool)], atol=1e-4)
    loss = weighted_cross_entropy([cosine_logits(z1, z2, tau), block], [ones, weight])
    assert loss.item() == pytest.approx(_hand_loss(hand, keep), rel=1e-5)
    ref = weighted_cross_entropy([cosine_logits(z1, z2, tau), *mixed_blocks(z1, z2, tau, lam)])
    assert loss.item() != pytest.approx(ref.item(), rel=1e-3)  # the two forms differ on the same batch
    z1g, z2g = z1.clone().requires_grad_(), z2.clone().requires_grad_()
    (g1,) = torch.autograd.grad(paper_form(z1g, z2g, tau, lam, False, ones)[0][0].sum(), z2g, allow_unused=True)
    assert g1 is None  # the mixes are detached: the block reaches z2 through nothing


def test_a_mixed_negative_takes_the_weight_of_its_dominant_sentence() -> None:
    """Block 1's column j (mostly z2_{j+1}): alpha[i, j+1]; block 2's row i (mostly z1_{i+1}):
    alpha[i+1, j]; eq. 3's m_ij (mostly z2_j): alpha[i, j], its diagonal removed."""
    from clinsent.losses.mixcse import paper_form, reference_form

    alpha = torch.ones(4, 4)
    alpha[0, 2] = alpha[2, 0] = 0.0  # sentences 0 and 2 look alike
    z = torch.randn(4, 3)
    (_, w1), (_, w2) = reference_form(z, z, 0.05, 0.2, True, alpha)
    for i in range(4):
        for j in range(4):
            assert w1[i, j] == alpha[i, (j + 1) % 4] and w2[i, j] == alpha[(i + 1) % 4, j]
    ((_, w),) = paper_form(z, z, 0.05, 0.2, False, alpha)
    assert torch.equal(w, alpha * (1 - torch.eye(4)))


def test_paper_eq3_needs_one_block() -> None:
    from testkit.methods import resolve_method

    with pytest.raises(InputError, match=r"mix_symmetric: eq\. 3 has one block"):
        resolve_method("m", {"objective": "mixcse", "mix_form": "paper_eq3"}, {}, [0])
    m = resolve_method("m", {"objective": "mixcse", "mix_form": "paper_eq3", "mix_symmetric": False}, {}, [0]).method
    assert m.settings.mix_form == "paper_eq3"


def test_the_complementary_model_can_be_a_trained_run() -> None:
    """complementary_model naming a method: that run's model (same base model and seed) is an input
    of the job and replaces the name in the job's settings; a wrong run is a config error."""
    from clinsent.methods.config import resolve_methods

    cfg = {
        "seeds": [0, 1],
        "methods": {"simcse": {"objective": "simcse"}, "iw": {"objective": "mixcse", "complementary_model": "simcse"}},
    }
    entries = resolve_methods(RunConfig.parse(cfg))
    method = entries["iw"].method.with_run_models({"simcse": "results/models/simcse/b/seed1/model"})
    assert method.settings.complementary_model == "results/models/simcse/b/seed1/model"
    assert entries["iw"].method.with_run_models({}) is entries["iw"].method
    bad = [
        ({"objective": "none"}, r"methods\.iw: names 'simcse', which is not trained"),
        ({"objective": "simcse", "seeds": [0]}, r"methods\.iw: names 'simcse', which has no run for seed\(s\) \[1\]"),
        (
            {"objective": "simcse", "init_from": "iw"},
            r"the chain (iw -> simcse -> iw|simcse -> iw -> simcse) is a cycle",
        ),
    ]
    for upstream, message in bad:
        with pytest.raises(InputError, match=message):
            resolve_methods(RunConfig.parse({**cfg, "methods": {**cfg["methods"], "simcse": upstream}}))
    with pytest.raises(InputError, match=r"methods\.iw: names 'iw', which is itself"):
        resolve_methods(RunConfig.parse({"methods": {"iw": {"objective": "mixcse", "complementary_model": "iw"}}}))
