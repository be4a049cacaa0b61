"""Two encoders as one grouped pass (clinsent.models.grouped): every layer's states and every
gradient are each model's own forward's (float32, within 1e-5 of each gradient's scale), on the
padded layout and on the real tokens (exact and static packings); dropout falls where the
models' own forward puts it, at their rates; the pass dispatches fewer operators than the two
models one after the other; a MED-SE or CT step with ``grouped`` equals the step without it; and what
cannot be grouped says why (gradient checkpointing's refusal: tests/train/test_speed.py)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from unittest import mock

import pytest
import torch
import torch.nn.functional as F

from clinsent.models.base import load_transformer
from clinsent.models.encoder import Encoder
from clinsent.models.grouped import why_not
from clinsent.models.unpadded import packing
from clinsent.train.loop import MethodLoop
from clinsent.train.syncs import SyncCounter

from testkit.losses import clinical_texts, method_and_encoder, objective_rows


def _encoders(tiny_bert: Path, unpad: bool = False) -> tuple[Encoder, Encoder]:
    """Two encoders of the tiny BERT's architecture with different weights."""
    out = []
    for seed in (0, 1):
        t = load_transformer(str(tiny_bert), 32)
        torch.manual_seed(seed)
        for p in t.model.parameters():  # weights of their own (the second not a copy of the first)
            p.data.add_(0.05 * torch.randn_like(p))
        enc = Encoder(t.model, t.tokenizer, "first_last", 1, 32, torch.device("cpu"))
        enc.unpad = unpad
        out.append(enc)
    return out[0], out[1]


def _batches(a: Encoder, b: Encoder, static: bool | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """Sentences for the first encoder, shorter definitions (fewer rows, another width) for the
    second; with their packings unless ``static`` is None (the padded layout)."""
    sentences = a.tokenize(clinical_texts(11))
    definitions = b.tokenize([f"A disease of the body number {i}." for i in range(5)])
    assert sentences["input_ids"].shape[1] != definitions["input_ids"].shape[1]
    if static is not None:
        for batch in (sentences, definitions):
            batch["packing"] = packing(batch["attention_mask"], static)
    return sentences, definitions


def _loss(states: list[Any], batches: tuple[dict[str, Any], ...]) -> torch.Tensor:
    """A loss over the real tokens of every layer's states of both encoders."""
    total = torch.zeros(())
    for hs, batch in zip(states, batches, strict=True):
        real = batch["attention_mask"][..., None].float()
        for i, h in enumerate(hs):
            total = total + ((h * real) ** 2).sum() * (i + 1) + (h * real).sum()
    return total


def _run(a: Encoder, b: Encoder, batches: tuple[dict[str, Any], dict[str, Any]], grouped: bool) -> Any:
    for enc in (a, b):
        enc.model.zero_grad()
    if grouped:
        states = list(a.hidden_states_beside(batches[0], b, batches[1]))
    else:
        states = [a.hidden_states(batches[0]), b.hidden_states(batches[1])]
    _loss(states, batches).backward()
    grads = {
        f"{k}.{n}": p.grad.clone()
        for k, enc in enumerate((a, b))
        for n, p in enc.model.named_parameters()
        if p.grad is not None
    }
    return [[h.detach() for h in hs] for hs in states], grads


def _no_dropout(*models: torch.nn.Module) -> None:
    """Train mode, every dropout probability 0."""
    for model in models:
        model.train()
        for m in model.modules():
            if isinstance(m, torch.nn.Dropout):
                m.p = 0.0


@pytest.mark.parametrize("layout", ["padded", "unpadded", "static"])
def test_grouped_states_and_gradients_are_each_models_own(tiny_bert: Path, layout: str) -> None:
    static = {"padded": None, "unpadded": False, "static": True}[layout]
    a, b = _encoders(tiny_bert, unpad=static is not None)
    _no_dropout(a.model, b.model)  # train mode, dropout off: both passes compute one function
    batches = _batches(a, b, static)
    want_states, want = _run(a, b, batches, grouped=False)
    got_states, got = _run(a, b, batches, grouped=True)
    for hs, gs, batch in zip(want_states, got_states, batches, strict=True):
        assert len(hs) == len(gs) == 3  # the embeddings and both layers
        real = batch["attention_mask"].bool()
        for x, y in zip(hs, gs, strict=True):
            assert x.shape == y.shape
            assert (x[real] - y[real]).abs().max().item() <= 1e-5
    assert want.keys() == got.keys() and any(k.startswith("1.encoder.layer.1.") for k in want)
    for name in want:  # float32: within 1e-5 of each gradient's own scale
        scale = max(1.0, want[name].abs().max().item())
        assert (want[name] - got[name]).abs().max().item() <= 1e-5 * scale, name


@contextlib.contextmanager
def _fixed_dropout() -> Iterator[list[float]]:
    """Dropout as a fixed scaling by its keep rate (the same function in both passes, where a
    random mask would differ with the layout); the attention probabilities' rates recorded."""
    rates: list[float] = []
    sdpa = F.scaled_dot_product_attention

    def attention(*args: Any, dropout_p: float = 0.0, **kwargs: Any) -> torch.Tensor:
        rates.append(dropout_p)
        return sdpa(*args, dropout_p=0.0, **kwargs)

    def scaled(self: torch.nn.Dropout, x: torch.Tensor) -> torch.Tensor:
        return x * (1 - self.p) if self.training else x

    with (
        mock.patch.object(torch.nn.Dropout, "forward", scaled),
        mock.patch.object(F, "scaled_dot_product_attention", attention),
    ):
        yield rates


@pytest.mark.parametrize("modes", ["both train", "second eval"])
def test_dropout_falls_where_each_models_own_forward_puts_it(tiny_bert: Path, modes: str) -> None:
    a, b = _encoders(tiny_bert)
    for enc, p in ((a, 0.3), (b, 0.3)):
        for m in enc.model.modules():
            if isinstance(m, torch.nn.Dropout):
                m.p = p
        enc.model.train()
        enc.model.config.attention_probs_dropout_prob = p
    if modes == "second eval":
        b.model.eval()
    batches = _batches(a, b, None)
    with _fixed_dropout() as rates:
        want_states, want = _run(a, b, batches, grouped=False)
        seen, rates[:] = sorted(rates), []
        got_states, got = _run(a, b, batches, grouped=True)
    assert sorted(rates) == seen and 0.3 in seen  # every attention with its model's rate
    assert (0.0 in seen) == (modes == "second eval")
    for hs, gs, batch in zip(want_states, got_states, batches, strict=True):
        real = batch["attention_mask"].bool()
        for x, y in zip(hs, gs, strict=True):
            assert (x[real] - y[real]).abs().max().item() <= 1e-5
    for name in want:
        scale = max(1.0, want[name].abs().max().item())
        assert (want[name] - got[name]).abs().max().item() <= 1e-5 * scale, name


def test_the_grouped_pass_dispatches_fewer_operators_than_the_two_models(tiny_bert: Path) -> None:
    """At six layers (the count grows with depth: per layer, the grouped pass dispatches about
    the operators of one model), forward and backward of the last layer's states."""
    from transformers import BertModel

    a, b = _encoders(tiny_bert)
    for enc in (a, b):
        enc.model = BertModel(enc.model.config.__class__(**{**enc.model.config.to_dict(), "num_hidden_layers": 6}))
    _no_dropout(a.model, b.model)
    batches = _batches(a, b, None)
    counts = []
    for grouped in (False, True):
        for counting in (False, True):  # first-use costs out of the count
            with SyncCounter() if counting else contextlib.nullcontext() as counted:
                if grouped:
                    states = a.hidden_states_beside(batches[0], b, batches[1])
                else:
                    states = (a.hidden_states(batches[0]), b.hidden_states(batches[1]))
                sum((hs[-1] ** 2).sum() for hs in states).backward()
        counts.append(counted.ops)
    assert counts[1] < 0.65 * counts[0], counts


def test_what_cannot_be_grouped_says_why(tiny_bert: Path) -> None:
    a, b = _encoders(tiny_bert)
    cpu = torch.device("cpu")
    assert why_not([a.model, b.model], cpu, None) is None
    b.model.config.layer_norm_eps = 1e-6
    assert why_not([a.model, b.model], cpu, None) == "the encoders' layer_norm_eps differ"
    assert "BERT's layout" in str(why_not([a.model, torch.nn.Linear(2, 2)], cpu, None))


def _step(
    tiny_bert: Path, objective: str, grouped: bool, **knobs: Any
) -> tuple[MethodLoop, dict[str, float], dict[str, torch.Tensor]]:
    """One step's loss parts and gradients, dropout off (MED-SE's two views by token cutoff; CT
    trains without dropout), so both passes compute one function."""
    torch.manual_seed(0)
    if objective == "medse":
        knobs["augmentation"] = "token_cutoff"
    method, encoder = method_and_encoder(
        tiny_bert, objective, steps=10, checkpoint_every=0, dropout=False, grouped=grouped, **knobs
    )
    loop = MethodLoop(method, encoder, seed=0, data=SimpleNamespace(classes=[]))  # type: ignore[arg-type]
    rows = objective_rows(objective, 16 if objective == "ct" else 13)
    batch = loop.prepare(SimpleNamespace(batch=lambda step: rows), 1)  # type: ignore[arg-type]
    loss: Any = loop.loss
    if objective == "medse":
        _no_dropout(loss.definition_model)
    loop.loss.train()
    encoder.model.train(False)  # dropout: false, as the loop's step sets it
    parts = loss(batch)
    sum(parts.values()).backward()
    grads = {n: p.grad.clone() for n, p in loss.named_parameters() if p.grad is not None}
    grads.update({f"encoder.{n}": p.grad.clone() for n, p in encoder.model.named_parameters() if p.grad is not None})
    return loop, {k: float(v.detach()) for k, v in parts.items()}, grads


@pytest.mark.parametrize(("objective", "unpad"), [("medse", False), ("medse", True), ("ct", False)])
def test_a_grouped_step_equals_the_step_without_it(tiny_bert: Path, objective: str, unpad: bool) -> None:
    """MED-SE's sentence and definition encoders, CT's twin and kept model."""
    plain, want, want_grads = _step(tiny_bert, objective, False, unpad=unpad)
    loop, got, got_grads = _step(tiny_bert, objective, True, unpad=unpad)
    assert not plain.loss.grouped and loop.loss.grouped
    assert "grouped: the encoders trained side by side run as one grouped pass" in loop.describe()
    assert all(v > 0 for v in want.values())
    for key in want:
        assert abs(got[key] - want[key]) <= 1e-5 * max(1.0, abs(want[key])), key
    second = "definition_model." if objective == "medse" else "twin_model."
    assert want_grads.keys() == got_grads.keys() and any(k.startswith(second) for k in want_grads)
    for name, grad in want_grads.items():
        scale = max(1.0, grad.abs().max().item())
        assert (grad - got_grads[name]).abs().max().item() <= 1e-5 * scale, name


def test_grouped_asked_for_where_it_cannot_run_says_why(tiny_bert: Path) -> None:
    method, encoder = method_and_encoder(tiny_bert, "medse", grouped=True, definition_trainable=False)
    loop = MethodLoop(method, encoder, seed=0, data=SimpleNamespace(classes=[]))  # type: ignore[arg-type]
    assert not loop.loss.grouped
    assert any(
        "grouped: the encoders run one after the other (the definition encoder is frozen" in line
        for line in loop.describe()
    )
    method, encoder = method_and_encoder(tiny_bert, "simcse", grouped=True)
    loop = MethodLoop(method, encoder, seed=0, data=SimpleNamespace(classes=[]))  # type: ignore[arg-type]
    assert "grouped: the encoders run one after the other (SimCSELoss trains one encoder)" in loop.describe()
