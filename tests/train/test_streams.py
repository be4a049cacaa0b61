"""MED-SE's trained definition encoder on a side branch (clinsent.gpu.streams): forked before the
sentence encoder's work is queued and joined after the entity encoder's, before the loss reads
it, so on a GPU the two encoders' forwards (and so their backwards) run side by side; on the CPU
it runs after the views, as before. With dropout off both orders give the same loss parts and
gradients. On the CPU, with a recording stand-in for a branch that has a stream of its own."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from unittest import mock

import torch

from clinsent.gpu.streams import Branch
from clinsent.train.loop import MethodLoop

from testkit.losses import method_and_encoder, objective_rows

EVENTS: list[str] = []


class ParallelBranch(Branch):
    """A branch that says it is parallel (as on CUDA) and records its fork, queue and join."""

    def __init__(self, device: torch.device) -> None:
        self.device, self.parallel = device, True
        EVENTS.append("fork")

    @contextlib.contextmanager
    def queued(self) -> Iterator[None]:
        EVENTS.append("on the branch")
        yield
        EVENTS.append("off the branch")

    def join(self) -> None:
        EVENTS.append("join")


def _step(tiny_bert: Path, parallel: bool) -> tuple[list[str], dict[str, float], dict[str, torch.Tensor]]:
    torch.manual_seed(0)
    method, encoder = method_and_encoder(
        tiny_bert, "medse", steps=10, checkpoint_every=0, dropout=False, augmentation="token_cutoff"
    )  # two views without dropout: both orders compute one function
    loop = MethodLoop(method, encoder, seed=0, data=SimpleNamespace(classes=[]))  # type: ignore[arg-type]
    batch = loop.prepare(SimpleNamespace(batch=lambda step: objective_rows("medse", 13)), 1)  # type: ignore[arg-type]
    loss: Any = loop.loss
    EVENTS.clear()
    hooks = [
        module.register_forward_hook(lambda *_, name=name: EVENTS.append(name))
        for name, module in (("sentences", encoder.model), ("definitions", loss.definitions.model))
    ]
    pooled = loss.entity_encoder.pooled  # the entity encoder's pass (not its forward)
    entities = mock.patch.object(
        loss.entity_encoder, "pooled", side_effect=lambda *a: EVENTS.append("entities") or pooled(*a)
    )
    branch = mock.patch("clinsent.losses.medse.Branch", ParallelBranch) if parallel else contextlib.nullcontext()
    with branch, entities:
        parts = loss(batch)
    for hook in hooks:
        hook.remove()
    sum(parts.values()).backward()
    grads = {n: p.grad.clone() for n, p in loss.named_parameters() if p.grad is not None}
    grads.update({f"encoder.{n}": p.grad.clone() for n, p in encoder.model.named_parameters() if p.grad is not None})
    return list(EVENTS), {k: float(v.detach()) for k, v in parts.items()}, grads


def test_the_definition_encoder_is_queued_first_on_its_branch_and_joined_before_the_loss(tiny_bert: Path) -> None:
    one_stream, want, want_grads = _step(tiny_bert, parallel=False)
    assert one_stream == ["sentences", "definitions", "entities"]  # the CPU's order: its draws as before
    two_streams, got, got_grads = _step(tiny_bert, parallel=True)
    assert two_streams == [
        "fork",
        "on the branch",
        "definitions",  # queued first, on its own stream
        "off the branch",
        "sentences",  # beside it, on the main one
        "entities",
        "join",  # the main stream waits for the branch only before the loss
    ]
    assert want["entity"] > 0 and got == want
    assert want_grads.keys() == got_grads.keys() and any(k.startswith("definition_model.") for k in want_grads)
    for name, grad in want_grads.items():
        assert float((grad - got_grads[name]).abs().max()) <= 1e-6, name
