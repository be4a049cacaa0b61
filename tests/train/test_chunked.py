"""Large batches in chunks (clinsent.train.chunked): with deterministic views (every dropout
probability 0), a cached step (``mini_batch``) gives each objective's loss and every parameter's
gradient of a one-pass step, in float32 on the CPU, and so does accumulation (``accumulate``)
for the objectives without in-batch negatives; MNR's equals sentence-transformers'
``CachedMultipleNegativesRankingLoss`` on the same batch; with dropout on, each chunk's two
passes draw the same masks; gradient checkpointing gives the same gradients; and the knobs
are refused where they do not apply."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import torch

from clinsent.errors import InputError
from clinsent.losses.base import Embedded, MethodLoss
from clinsent.models.base import load_transformer
from clinsent.models.encoder import Encoder, checkpoint_layers
from clinsent.train.chunked import accumulated_step, cached_step

from testkit.losses import (
    clinical_texts,
    loss_and_batch,
    method_and_encoder,
    no_dropout,
    objective_rows,
    one_pass,
    take_grads,
    trainable_params,
    two_passes,
)
from testkit.methods import resolve_method

TOL = 1e-5  # float32, CPU; gradients: relative to each tensor's largest magnitude where that exceeds 1


def _setup(
    tiny_bert: Path, objective: str, dropout: bool = False, **knobs: Any
) -> tuple[MethodLoss, Encoder, dict[str, Any]]:
    method, encoder = method_and_encoder(tiny_bert, objective, **knobs)
    return loss_and_batch(method, encoder, objective, dropout)


def _assert_same(
    plain: dict[str, torch.Tensor],
    chunked: dict[str, torch.Tensor],
    g_plain: dict[str, torch.Tensor],
    g_chunked: dict[str, torch.Tensor],
) -> None:
    assert plain.keys() == chunked.keys()
    for k in plain:
        assert abs(float(plain[k]) - float(chunked[k])) <= TOL, (k, float(plain[k]), float(chunked[k]))
    moved = [k for k, g in g_plain.items() if float(g.abs().max()) > 0]
    assert len(moved) > len(g_plain) // 2  # the comparison is not between zeros
    for k, g in g_plain.items():  # within TOL of the tensor's largest magnitude (CT's are ~20: float32 rounding)
        assert float((g - g_chunked[k]).abs().max()) <= TOL * max(1.0, float(g.abs().max())), k


CACHED = [
    ("simcse", {"augmentation": "token_shuffle", "dropout": False}),
    ("simcse", {"augmentation": "token_cutoff", "dropout": False}),
    ("simcse", {"augmentation": "word_deletion", "dropout": False, "pooling": "cls"}),
    ("simcse", {}),
    ("medse", {"lambda": 0.5}),
    ("medse", {"lambda": 0.5, "perturbation": "shuffle_pairs", "definition_trainable": False}),
    ("medse", {"lambda": 0.5, "entity_encoder": "cross_attention"}),
    ("medse", {"lambda": 0.5, "grouped": True}),  # its two encoders as one grouped pass, chunk by chunk
    ("mixcse", {"phi": 0.97, "pooling": "first_last"}),  # the tiny BERT's cosines: 0.93-1.0
    ("mixcse", {"instance_weighting": False, "mix_form": "paper_eq3", "mix_symmetric": False}),
    ("mixcse", {"mixing": False, "phi": 0.97, "pooling": "first_last"}),
    ("sup_simcse", {}),
    ("sup_simcse", {"hard_negatives": False, "pooling": "cls_mlp"}),
    ("mnr", {}),
    ("ct", {}),
    ("ct", {"grouped": True}),  # the twin and the kept model as one grouped pass
    ("declutr", {}),
]


@pytest.mark.parametrize(
    ("objective", "knobs"), CACHED, ids=[f"{o}-{'-'.join(map(str, k.values()))}" for o, k in CACHED]
)
def test_a_cached_step_gives_the_one_pass_loss_and_gradients(
    tiny_bert: Path, objective: str, knobs: dict[str, Any]
) -> None:
    loss, encoder, batch = _setup(tiny_bert, objective, **knobs)
    assert loss.use_grouped(bool(knobs.get("grouped"))) is None and loss.grouped == bool(knobs.get("grouped"))
    params = trainable_params(loss, encoder)
    plain = one_pass(loss, batch)
    g_plain = take_grads(params)
    chunked = cached_step(loss, batch, 5, encoder.device)  # 13 rows (CT: 16 pairs) in uneven chunks
    _assert_same(plain, chunked, g_plain, take_grads(params))


@pytest.mark.parametrize("objective", ["mlm", "note_category"])
def test_accumulated_micro_batches_give_the_one_pass_gradients(tiny_bert: Path, objective: str) -> None:
    loss, encoder, batch = _setup(tiny_bert, objective)
    params = trainable_params(loss, encoder)
    plain = one_pass(loss, batch)
    g_plain = take_grads(params)
    accumulated = accumulated_step(loss, batch, 4)
    _assert_same(plain, accumulated, g_plain, take_grads(params))


def test_cached_mnr_equals_sentence_transformers_cached_loss(tiny_bert: Path) -> None:
    """Ours (mnr, mini_batch 4) and sentence-transformers' CachedMultipleNegativesRankingLoss
    (scale 20, mini_batch_size 4) on one model and batch: the same loss and gradients."""
    from sentence_transformers.sentence_transformer.losses import CachedMultipleNegativesRankingLoss
    from sentence_transformers.util import batch_to_device

    from clinsent.models.base import sentence_transformer

    loss, encoder, batch = _setup(tiny_bert, "mnr")
    t = load_transformer(str(tiny_bert), 32)
    st_model = sentence_transformer(t, "mean", device="cpu")
    st_model.train()
    no_dropout(st_model)
    encoder.model.load_state_dict(st_model[0].auto_model.state_dict())
    rows = objective_rows("mnr")
    theirs = CachedMultipleNegativesRankingLoss(st_model, scale=20.0, mini_batch_size=4)
    features = [
        batch_to_device(st_model.preprocess(rows[c].tolist()), "cpu") for c in ("anchor", "positive", "negative")
    ]
    value = theirs(features, None)
    value.backward()
    st_grads = {k: p.grad for k, p in st_model[0].auto_model.named_parameters() if p.grad is not None}
    ours = cached_step(loss, batch, 4, encoder.device)
    assert abs(float(ours["supervised"]) - float(value.detach())) <= TOL
    grads = {k: p.grad for k, p in encoder.model.named_parameters() if p.grad is not None}
    assert grads.keys() == st_grads.keys() and len(grads) > 30  # every layer (the unused pooler has none)
    for k, g in grads.items():
        assert float((g - st_grads[k]).abs().max()) <= TOL * max(1.0, float(g.abs().max())), k


def test_with_dropout_each_chunks_two_passes_draw_the_same_masks(tiny_bert: Path) -> None:
    """SimCSE with dropout on (its noise): the gradient pass replays the random state of the
    no-gradient pass, so each chunk's vectors are the same in both (and differ between views)."""
    loss, encoder, batch = _setup(tiny_bert, "simcse", dropout=True)
    pairs: list[tuple[Embedded, Embedded]] = []
    before = torch.get_rng_state()
    pairs = two_passes(loss, lambda: cached_step(loss, batch, 4, encoder.device))
    assert len(pairs) == 4
    for first, again in pairs:
        for k in ("z1", "z2"):
            assert float((first.vectors[k] - again.vectors[k].detach()).abs().max()) <= 1e-6
        assert float((first.vectors["z1"] - first.vectors["z2"]).abs().max()) > 1e-3  # dropout made two views
    assert not torch.equal(before, torch.get_rng_state())  # the masks were drawn from the generator, once


def test_gradient_checkpointing_gives_the_same_gradients(tiny_bert: Path) -> None:
    """transformers' checkpointing replays dropout: with dropout on, the same seed gives the same
    gradients with and without it."""
    grads = []
    for on in (False, True):
        loss, encoder, batch = _setup(tiny_bert, "simcse", dropout=True)
        if on:
            checkpoint_layers(encoder.model)
        params = trainable_params(loss, encoder)
        torch.manual_seed(7)
        one_pass(loss, batch)
        grads.append(take_grads(params))
    assert max(float((grads[0][k] - grads[1][k]).abs().max()) for k in grads[0]) <= TOL


@pytest.mark.parametrize(
    ("objective", "key", "fix"),
    [
        ("simcse", "accumulate", "mini_batch"),
        ("declutr", "accumulate", "mini_batch"),
        ("mlm", "mini_batch", "accumulate"),
    ],
)
def test_each_memory_knob_is_refused_where_it_does_not_apply(objective: str, key: str, fix: str) -> None:
    with pytest.raises(InputError) as err:
        resolve_method("m", {"objective": objective, "batch_size": 16, key: 4}, {}, [0])
    assert f"methods.m.{key}" in str(err.value) and f"use {fix}" in str(err.value)
    shared = resolve_method("m", {"objective": objective, "batch_size": 16}, {key: 4}, [0])  # the shared block:
    assert getattr(shared.method.settings, key) == (1 if key == "accumulate" else None)  # only where it applies


class _ForwardOnlyLoss(MethodLoss):
    """A loss as a plugin wrote it before losses had halves: ``prepare`` and ``forward`` only, no ``n``."""

    def __init__(self, encoder: Encoder) -> None:
        super().__init__()
        self.encoder = encoder

    def prepare(self, rows: pd.DataFrame, generator: torch.Generator) -> dict[str, Any]:
        return {"features": self.encoder.tokenize(rows["text"].tolist())}

    def forward(self, batch: dict[str, Any]) -> dict[str, torch.Tensor]:
        emb = torch.nn.functional.normalize(self.encoder.embed_batch(batch["features"]), dim=-1)
        return {"spread": (emb @ emb.T).mean()}


def test_a_forward_only_loss_steps_in_one_pass_and_takes_no_memory_knob(
    tiny_bert: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from clinsent.methods import METHODS
    from clinsent.methods.base import Method
    from clinsent.methods.knobs import SentencePlanSettings, TrainedSettings
    from clinsent.train.loop import MethodLoop

    class Settings(TrainedSettings, SentencePlanSettings):
        pass

    class ForwardOnly(Method):
        name = "forward_only"
        settings_class = Settings

        def build_loss(self, encoder: Encoder) -> MethodLoss:
            return _ForwardOnlyLoss(encoder)

    monkeypatch.setitem(METHODS._entries, "forward_only", ForwardOnly)
    for key in ("mini_batch", "accumulate"):
        with pytest.raises(InputError) as err:
            resolve_method("m", {"objective": "forward_only", "batch_size": 8, key: 4}, {}, [0])
        assert f"methods.m.{key}" in str(err.value) and "one pass" in str(err.value)
    method = resolve_method(
        "m", {"objective": "forward_only", "batch_size": 8, "steps": 1}, {"mini_batch": 4, "accumulate": 2}, [0]
    ).method  # the shared block: neither applies
    assert (method.settings.mini_batch, method.settings.accumulate) == (None, 1)
    t = load_transformer(str(tiny_bert), 32)
    encoder = Encoder(t.model, t.tokenizer, "mean", False, 32, torch.device("cpu"))
    loop = MethodLoop(method, encoder, seed=0)
    before = next(encoder.model.parameters()).detach().clone()
    parts = loop.step(loop.loss.prepare(pd.DataFrame({"text": clinical_texts(8)}), torch.Generator().manual_seed(0)))
    assert set(parts) == {"loss", "loss_spread"} and torch.isfinite(parts["loss"])
    assert not torch.equal(before, next(encoder.model.parameters()).detach())  # the one-pass step moved the model
