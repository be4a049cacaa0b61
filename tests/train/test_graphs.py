"""The captured step (clinsent.train.graphs) on the CPU, with the recording stand-in for the CUDA
capture: each shape warms up eagerly, is captured once and replayed from the captured step's own
inputs, and a run so stepped ends where the eager run ends (same losses, same weights); the steps
are gathered from token files with no tokenizer call; a run takes at most its buckets' shapes."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from unittest import mock

import pytest
import torch

from clinsent.train.graphs import Recording, signature
from clinsent.train.loop import MethodLoop

from testkit.losses import method_and_encoder, token_plan


def _loop(
    tiny_bert: Path, objective: str, data: Any, capture: Any = None, log: Any = print, **knobs: Any
) -> MethodLoop:
    torch.manual_seed(0)  # the unused pooler's weights, drawn when the model loads, alike too
    method, encoder = method_and_encoder(tiny_bert, objective, steps=10, checkpoint_every=0, batch_size=8, **knobs)
    return MethodLoop(method, encoder, seed=0, data=data, capture=capture, log=log)


@pytest.mark.parametrize("objective", ["simcse", "medse", "mlm", "simcse:unpad", "medse:grouped"])
def test_a_captured_run_ends_where_the_eager_run_ends(tiny_bert: Path, tmp_path: Path, objective: str) -> None:
    """``simcse:unpad``: the unpadded forward, its packing static (a few token counts per bucket);
    ``medse:grouped``: MED-SE's two encoders as one grouped pass."""
    objective, _, knob = objective.partition(":")
    knobs = {knob: True} if knob else {}
    data = token_plan(tmp_path, tiny_bert, steps=10, batch=8, max_length=32, entities=objective == "medse")
    lines: list[str] = []
    recording = Recording()
    runs = {}
    for name, capture in (("eager", None), ("captured", recording)):
        loop = _loop(tiny_bert, objective, data, capture, lines.append, graphs=True, length_buckets=2, **knobs)
        loop.loss.use_static_shapes(True)  # the eager run's shapes as a captured run's (MED-SE's entity slots)
        losses = [float(loop.step(loop.prepare(data, step))["loss"]) for step in range(1, 11)]
        runs[name] = (losses, [p.detach().clone() for p in loop.params], loop)
    (want, want_params, eager), (got, got_params, captured) = runs["eager"], runs["captured"]
    assert eager.graphs is None and captured.graphs is not None  # the CPU steps eagerly without a stand-in
    shapes = {signature(captured.prepare(data, step)) for step in range(1, 11)}
    # two buckets, two shapes (unpadded: each with a few token counts)
    assert recording.captures == len(captured.graphs.graphs) <= len(shapes) <= (6 if knob == "unpad" else 2)
    assert captured.loss.grouped == (knob == "grouped")
    assert recording.replays == 10 - len(shapes) >= 4  # each shape's first step warms up, then every step replays
    assert sum("step graph" in line and "captured" in line for line in lines) == recording.captures
    assert got == pytest.approx(want, abs=1e-6)
    for a, b in zip(want_params, got_params, strict=True):
        assert float((a - b).abs().max()) <= 1e-6


def test_steps_from_token_files_call_no_tokenizer(tiny_bert: Path, tmp_path: Path) -> None:
    from clinsent.data.encode import TextEncoder

    data = token_plan(tmp_path, tiny_bert, steps=10, batch=8, max_length=32, entities=True)
    for objective in ("simcse", "medse", "ct"):
        loop = _loop(tiny_bert, objective, data)
        assert loop.tokens
        refused = mock.Mock(side_effect=AssertionError("a tokenizer call in the step"))
        with (
            mock.patch.object(TextEncoder, "encode", refused),
            mock.patch("transformers.tokenization_utils_base.PreTrainedTokenizerBase.__call__", refused),
        ):
            for step in range(1, 7):
                loop.step(loop.prepare(data, step))


def test_a_run_takes_at_most_its_buckets_shapes_and_says_so(tiny_bert: Path, tmp_path: Path) -> None:
    data = token_plan(tmp_path, tiny_bert, steps=10, batch=8, max_length=32, n=60)
    loop = _loop(tiny_bert, "simcse", data, length_buckets=2)
    shapes = {signature(loop.prepare(data, step)) for step in range(1, 11)}
    assert len(loop.buckets["text"].lengths) == 2 and len(shapes) <= 2
    assert any("length buckets" in line for line in loop.describe())
    dynamic = _loop(tiny_bert, "simcse", data, length_buckets=0)
    assert len({signature(dynamic.prepare(data, step)) for step in range(1, 11)}) > 2
    fixed = _loop(tiny_bert, "simcse", data, length_buckets=[24, 32])
    widths = {fixed.prepare(data, step)["doubled"]["input_ids"].shape[1] for step in range(1, 11)}
    assert widths <= {24, 32}
