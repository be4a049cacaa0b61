"""MED-SE and SimCSE losses on hand-computed cases; pooling layer indices; entity spans."""

from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from clinsent.losses.contrastive import info_nce
from clinsent.losses.medse import MedSELoss, entity_loss, span_token_mask
from clinsent.models.entity_encoder import ENTITY_ENCODERS, entity_encoder
from clinsent.models.pooling import pool


def test_entity_loss_hand_computed() -> None:
    h_ent = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    h_def = torch.tensor([[1.0, 1.0], [0.0, 2.0]])
    tau = 0.5
    # cos(e1,d1)=1/sqrt2, cos(e1,d2)=0, cos(e2,d1)=1/sqrt2, cos(e2,d2)=1; logits = cos / tau
    r = math.sqrt(2)
    row1 = -math.log(math.exp(r) / (math.exp(r) + math.exp(0)))
    row2 = -math.log(math.exp(2) / (math.exp(r) + math.exp(2)))
    assert entity_loss(h_ent, h_def, tau).item() == pytest.approx((row1 + row2) / 2, rel=1e-6)


def test_medse_total_is_sentence_plus_lambda_entity() -> None:
    z1 = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    z2 = torch.tensor([[1.0, 0.1], [0.2, 1.0], [1.0, 0.9]])
    h_ent = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    h_def = torch.tensor([[1.0, 1.0], [0.0, 2.0]])
    # the loss module's own scoring of the embedded batch (eq. 3), without an encoder
    parts = MedSELoss.score(
        SimpleNamespace(temperature=0.05, lam=0.1), {"z1": z1, "z2": z2, "h_ent": h_ent, "h_def": h_def}, {}
    )  # type: ignore[arg-type]
    l_sen, l_ent = parts["sentence"], entity_loss(h_ent, h_def, 0.05)
    assert l_sen.item() == pytest.approx(info_nce(z1, z2, 0.05).item())
    assert parts["entity"].item() == pytest.approx(0.1 * l_ent.item()) and l_ent.item() > 0
    # SimCSE: one direction, no intra-view negatives
    logits = torch.nn.functional.normalize(z1, dim=1) @ torch.nn.functional.normalize(z2, dim=1).T / 0.05
    manual = -torch.log_softmax(logits, dim=1).diag().mean()
    assert l_sen.item() == pytest.approx(manual.item(), rel=1e-6)


def test_entity_loss_empty_batch_is_zero() -> None:
    assert entity_loss(torch.zeros(0, 4), torch.zeros(0, 4), 0.05).item() == 0.0


def _states() -> tuple[torch.Tensor, ...]:
    torch.manual_seed(0)
    return tuple(torch.randn(2, 4, 3) for _ in range(4))  # embeddings + 3 layers


def test_pooling_layer_indices() -> None:
    hs = _states()
    mask = torch.tensor([[1, 1, 1, 0], [1, 1, 0, 0]])
    m = mask.unsqueeze(-1).float()

    def mean(x: torch.Tensor) -> torch.Tensor:
        return (x * m).sum(1) / m.sum(1)

    assert torch.allclose(pool(hs, mask, "cls"), hs[-1][:, 0])
    assert torch.allclose(pool(hs, mask, "mean"), mean(hs[-1]))
    assert torch.allclose(pool(hs, mask, "first_last"), mean((hs[1] + hs[-1]) / 2))
    assert torch.allclose(pool(hs, mask, "first_last", first_layer=0), mean((hs[0] + hs[-1]) / 2))
    assert not torch.allclose(pool(hs, mask, "first_last", 0), pool(hs, mask, "first_last", 1))
    with pytest.raises(ValueError):
        pool(hs, mask, "first_last", first_layer=3)


def test_span_token_mask() -> None:
    offsets = torch.tensor([[0, 0], [0, 7], [8, 12], [12, 13], [14, 17], [0, 0]])  # [CLS] history of CHF ... [SEP]
    assert span_token_mask(offsets, 8, 13).tolist() == [False, False, True, True, False, False]
    assert not span_token_mask(offsets, 40, 45).any()


def test_entity_encoder_uses_only_span_tokens() -> None:
    torch.manual_seed(0)
    states = torch.randn(2, 5, 8)
    span = torch.tensor([[False, True, True, False, False], [False, False, False, True, False]])
    mean_enc = entity_encoder("mean", 8)
    out = mean_enc(states, span)
    assert torch.allclose(out[0], states[0, 1:3].mean(0)) and torch.allclose(out[1], states[1, 3])
    enc = entity_encoder("transformer", 8, heads=2).eval()
    noisy = states.clone()
    noisy[0, 4] += 100.0  # outside the span: must not change the entity embedding
    assert torch.allclose(enc(states, span), enc(noisy, span), atol=1e-5)


def test_every_entity_encoder_a_config_can_name_is_built() -> None:
    """The settings' names (torch-free, the schema's enum) and the modules' table agree."""
    import typing

    from clinsent.methods.medse import MedSESettings

    names = typing.get_args(typing.get_type_hints(MedSESettings)["entity_encoder"])
    assert set(names) == set(ENTITY_ENCODERS)
    states, span = torch.randn(2, 5, 8), torch.tensor([[False, True, True, False, False]] * 2)
    for name in names:
        out = entity_encoder(name, 8, heads=2)(states, span, torch.ones(2, 5, dtype=torch.long))
        assert out.shape == (2, 8) and torch.isfinite(out).all(), name


@pytest.mark.parametrize(
    ("pooling", "first_layer", "extra"),
    [
        ("cls", 1, None),
        ("mean", 1, None),
        ("first_last", 1, None),
        ("first_last", 0, None),
        ("mean", 1, "normalize"),
        ("mean", 1, "dense"),
        ("mean", 1, "relu_dense"),
        ("cls_mlp", 1, "head"),
        ("cls_mlp", 1, "head_normalize"),
    ],
)
def test_embed_loader_gives_the_vectors_of_sentence_transformers(
    tiny_bert: Path, tmp_path: Path, pooling: str, first_layer: int, extra: str | None
) -> None:
    """The embed jobs' loader (transformers alone for the layouts we save) against
    SentenceTransformer(path) on the same saved model; other layouts go to the library."""
    import numpy as np
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Dense, Normalize

    from clinsent.embedding.vectors import load_encoder
    from clinsent.models.base import load_transformer, sentence_transformer
    from clinsent.models.pooling import MlpHead
    from clinsent.models.saved import SavedEncoder

    transformer = load_transformer(str(tiny_bert), 24)
    head = MlpHead(32) if extra and extra.startswith("head") else None
    model = sentence_transformer(transformer, pooling, first_layer, head=head)
    if extra in ("normalize", "head_normalize"):
        model.append(Normalize())
    elif extra == "dense":  # a Dense with tanh (the default): ours
        model.append(Dense(32, 8))
    elif extra == "relu_dense":  # another activation: the library's
        model.append(Dense(32, 8, activation_function=torch.nn.ReLU()))
    torch.manual_seed(0)
    with torch.no_grad():  # non-trivial layer weights, so a wrong weighting shows
        for module in model:
            if hasattr(module, "layer_weights"):
                module.layer_weights.copy_(torch.rand_like(module.layer_weights) + 0.1)
    model.save(str(tmp_path / "m"))
    texts = [
        "The patient has gout.",
        "History of asthma and a long sentence that is cut at the maximum length of twenty-four tokens for sure.",
        "Fever.",
        "Chest pain radiating to the left arm.",
    ]
    ours = load_encoder(tmp_path / "m", "cpu")
    assert isinstance(ours, SavedEncoder) == (extra != "relu_dense")
    reference = SentenceTransformer(str(tmp_path / "m"), device="cpu").encode(texts, batch_size=3)
    np.testing.assert_allclose(ours.encode(texts, batch_size=3), reference, rtol=1e-4, atol=1e-5)


def test_the_pooling_names_a_config_can_give_are_the_pooling_table() -> None:
    """The settings' names (torch-free: the schema's enum, and the poolings whose MLP must be
    trained) agree with :data:`clinsent.models.pooling.POOLINGS`; ``model`` (the base model's own
    pooling) becomes one of them when the job loads the model."""
    import typing

    from clinsent.methods.knobs import TRAINED_HEAD_POOLINGS, MethodSettings
    from clinsent.models.pooling import POOLINGS
    from clinsent.models.st_config import MODES

    assert set(typing.get_args(typing.get_type_hints(MethodSettings)["pooling"])) == set(POOLINGS) | {"model"}
    assert set(MODES.values()) <= set(POOLINGS)
    assert set(TRAINED_HEAD_POOLINGS) == {name for name, spec in POOLINGS.items() if spec.mlp_at_test}
