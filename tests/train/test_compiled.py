"""The whole training step compiled (clinsent.train.compiled): every objective's step traces as
one graph with no break (``fullgraph=True``: a break is an error), and the compiled step
(``backend="aot_eager"``: Dynamo's graph and AOTAutograd's backward, run by eager kernels, so
the test checks the capture and not a code generator) gives the eager step's loss parts and
gradients within 1e-5 (float32, deterministic views: dropout off). Bucketed padding changes no
embedding."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from clinsent.data.positions import fresh
from clinsent.methods import METHODS
from clinsent.train.compiled import BUCKET, compile_loss, encoders_of
from clinsent.train.loop import MethodLoop

from testkit.losses import method_and_encoder, objective_rows

TRAINED = sorted(n for n in METHODS.names() if n != "none")
# the second view: an augmentation drawn when the batch is prepared (ConSERT's cutoff: a hook in the graph)
AUGMENTED = {"medse": "token_shuffle", "mixcse": "token_shuffle", "simcse": "token_cutoff"}
TOLERANCE = 1e-5  # float32; aot_eager runs AOTAutograd's decomposed graph, not the eager modules


def _parts_and_grads(forward: object, loop: MethodLoop, batch: dict) -> tuple[dict, list]:
    for p in loop.params:
        p.grad = None
    parts = forward(batch)  # type: ignore[operator]
    torch.stack(list(parts.values())).sum().backward()
    return {k: v.detach().clone() for k, v in parts.items()}, [
        None if p.grad is None else p.grad.clone() for p in loop.params
    ]


@pytest.mark.parametrize("objective", TRAINED)
def test_the_compiled_step_is_one_graph_and_gives_the_eager_step(tiny_bert: Path, objective: str) -> None:
    torch._dynamo.reset()
    views = {"augmentation": AUGMENTED[objective]} if objective in AUGMENTED else {}  # dropout's: equal views
    method, encoder = method_and_encoder(tiny_bert, objective, steps=10, checkpoint_every=0, dropout=False, **views)
    loop = MethodLoop(method, encoder, seed=0, data=SimpleNamespace(classes=["a", "b", "c"]))  # type: ignore[arg-type]
    compiled = compile_loss(loop.loss, encoder, backend="aot_eager", fullgraph=True)
    batch = loop.loss.prepare(
        objective_rows(objective, 16 if objective == "ct" else 13), torch.Generator().manual_seed(0)
    )
    widths = [v.shape[-1] for v in _token_tensors(batch)]
    assert widths and all(w % BUCKET == 0 for w in widths), widths
    loop.loss.eval()  # every module: no dropout draw (the encoder's, a head's)
    want, want_grads = _parts_and_grads(loop.loss, loop, batch)
    got, got_grads = _parts_and_grads(compiled, loop, batch)
    assert want.keys() == got.keys()
    for k in want:
        assert float((want[k] - got[k]).abs().max()) <= TOLERANCE, k
    assert sum(g is not None for g in want_grads) > 10
    for a, b in zip(want_grads, got_grads, strict=True):
        assert (a is None) == (b is None)
        if a is not None:
            assert float((a - b).abs().max()) <= TOLERANCE * max(1.0, float(a.abs().max()))
    torch._dynamo.reset()


def _token_tensors(batch: object) -> list[torch.Tensor]:
    """Every attention mask in a prepared batch (nested dicts)."""
    if isinstance(batch, dict):
        return [t for k, v in batch.items() for t in ([v] if k == "attention_mask" else _token_tensors(v))]
    return []


def test_bucketed_padding_gives_the_same_embeddings(tiny_bert: Path) -> None:
    """A batch gathered to a bucket's width (or, compiled without buckets, to a multiple of
    BUCKET) embeds as the batch padded to its longest row, in eval mode, within 1e-5."""
    from clinsent.data.buckets import Buckets
    from clinsent.losses.base import gathered

    method, encoder = method_and_encoder(tiny_bert, "medse")
    loop = MethodLoop(method, encoder, seed=0)
    assert len(list(encoders_of(loop.loss, encoder))) == 2  # the sentence and the definition encoders
    table, _ = loop.loss.text_encoder().encode(
        ["a short one", "a much longer sentence with more words than the other"]
    )
    rows = np.arange(2)
    encoder.model.eval()
    with torch.no_grad():
        plain = encoder.embed_batch(gathered([(table, rows)], table.width(rows), fresh))
        loop.loss.use_buckets({"text": Buckets((32,), 32)})
        assert loop.loss.width("text", table.width(rows)) == 32
        padded = encoder.embed_batch(gathered([(table, rows)], 32, fresh))
        assert float((padded - plain).abs().max()) <= 1e-5
        loop.loss.use_buckets({})
        compile_loss(loop.loss, encoder, backend="aot_eager")  # no buckets: a multiple of BUCKET
        assert loop.loss.width("text", 13) == BUCKET
    torch._dynamo.reset()
