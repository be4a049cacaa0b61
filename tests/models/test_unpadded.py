"""The unpadded forward (clinsent.models.unpadded): the same embeddings and gradients as the
padded one in eval mode (float32, max-abs 1e-5), every layer fed the real tokens only, no host
sync in the step, and the knob's checks."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from clinsent.errors import InputError
from clinsent.models.base import load_transformer
from clinsent.models.encoder import Encoder
from clinsent.models.unpadded import PACKING, attach, granule, packing
from clinsent.train.loop import MethodLoop
from clinsent.train.syncs import SyncCounter

from testkit.losses import clinical_texts, method_and_encoder, objective_rows
from testkit.methods import resolve_method


def _encoder(tiny_bert: Path, pooling: str, unpad: bool) -> Encoder:
    t = load_transformer(str(tiny_bert), 32)
    enc = Encoder(t.model, t.tokenizer, pooling, 1, 32, torch.device("cpu"))
    enc.unpad = unpad
    return enc


@pytest.mark.parametrize("pooling", ["first_last", "mean", "cls"])
def test_unpadded_embeddings_equal_the_padded_ones_in_eval_mode(tiny_bert: Path, pooling: str) -> None:
    texts = clinical_texts(11)
    padded, unpadded = _encoder(tiny_bert, pooling, False), _encoder(tiny_bert, pooling, True)
    batch = padded.tokenize(texts)
    assert packing(batch["attention_mask"]).index.numel() < 0.9 * batch["attention_mask"].numel()  # it pads
    padded.model.eval()
    unpadded.model.eval()
    with torch.no_grad():
        a, b = padded.embed_batch(batch), unpadded.embed_batch(batch)
        states_a, states_b = padded.hidden_states(batch), unpadded.hidden_states(batch)
    assert (a - b).abs().max().item() <= 1e-5
    real = batch["attention_mask"].bool()
    for x, y in zip(states_a, states_b, strict=True):  # every layer, at the real tokens
        assert (x[real] - y[real]).abs().max().item() <= 1e-5
    # explicit positions (ConSERT's token shuffle) go through the model's own embeddings module too
    positions = torch.arange(batch["input_ids"].shape[1]).flip(0).expand_as(batch["input_ids"]).contiguous()
    with torch.no_grad():
        c = padded.hidden_states(batch, position_ids=positions)[-1]
        d = unpadded.hidden_states(batch, position_ids=positions)[-1]
    assert (c[real] - d[real]).abs().max().item() <= 1e-5


@pytest.mark.parametrize("static", [False, True])
def test_every_layer_is_fed_the_real_tokens_only_and_the_gradients_match(tiny_bert: Path, static: bool) -> None:
    """``static``: a captured step's packing, the real tokens then scratch rows up to a multiple of
    the granule; the real tokens' states and every gradient are the exact packing's."""
    texts = clinical_texts(9)
    padded, unpadded = _encoder(tiny_bert, "first_last", False), _encoder(tiny_bert, "first_last", True)
    batch = padded.tokenize(texts)
    fed: list[int] = []
    handle = unpadded.model.encoder.layer[0].intermediate.dense.register_forward_hook(
        lambda _m, args, _out: fed.append(args[0].reshape(-1, args[0].shape[-1]).shape[0])
    )
    grads = []
    for enc in (padded, unpadded):
        enc.model.eval()  # no dropout: the two forwards are the same function
        enc.model.zero_grad()
        (enc.embed_batch(attach(dict(batch), static)) ** 2).sum().backward()
        grads.append({n: p.grad.clone() for n, p in enc.model.named_parameters() if p.grad is not None})
    handle.remove()
    real, g = int(batch["attention_mask"].sum()), granule(*batch["attention_mask"].shape)
    if static:  # the real tokens and under a granule of scratch rows
        assert fed == [max(g, -(-real // g) * g)]
    else:
        assert fed == [real]  # the real-token share of the layer input is 1
    assert grads[0].keys() == grads[1].keys()
    for name in grads[0]:  # float32: within 1e-5 of each gradient's own scale (the token-type one is ~400)
        scale = max(1.0, grads[0][name].abs().max().item())
        assert (grads[0][name] - grads[1][name]).abs().max().item() <= 1e-5 * scale, name


def test_a_static_packing_has_few_token_counts_and_keeps_its_scratch_rows_apart() -> None:
    """Over batches of every fill, a static packing's token count is a multiple of the granule
    (at most eight per shape), its scratch rows read the first token and are written past the
    layout, its dummy sequences cover them in fixed number, none longer than the width."""
    rows, width, counts = 16, 32, set()
    g = granule(rows, width)
    assert g == 64 and granule(512, 128) == 8192
    generator = torch.Generator().manual_seed(0)
    for fill in [0.0, 1.0, *torch.rand(40, generator=generator).tolist()]:
        lengths = (torch.rand(rows, generator=generator) * fill * width).long().clamp(0, width)
        if fill == 1.0:  # a full batch: no padding, and a whole number of granules
            lengths[:] = width
        mask = (torch.arange(width)[None, :] < lengths[:, None]).long()
        exact, static = packing(mask), packing(mask, static=True)
        real, total = len(exact.index), len(static.index)
        assert total == max(g, -(-real // g) * g) and static.room == g  # the next multiple
        assert torch.equal(static.index[:real], exact.index) and torch.equal(static.target[:real], exact.index)
        assert not static.index[real:].any()  # the scratch rows read the first token
        assert torch.equal(static.target[real:], rows * width + torch.arange(total - real))  # past the layout
        cu = static.cu_lengths
        assert torch.equal(cu[: rows + 1], exact.cu_lengths) and len(cu) == rows + 1 + g // width
        steps = cu[1:] - cu[:-1]
        assert int(cu[-1]) == total and bool((steps >= 0).all()) and int(steps[rows:].max()) <= width
        assert static.max_length == width and exact.max_length == int(lengths.max())
        counts.add(total)
    assert len(counts) <= rows * width // g  # eight token counts for this shape at most


@pytest.mark.parametrize("objective", ["simcse", "medse"])
def test_an_unpadded_training_step_makes_no_host_sync(tiny_bert: Path, objective: str) -> None:
    """The packing of every tokenized batch (MED-SE's definitions too) is made when the batch is
    prepared; the step reads it."""
    method, encoder = method_and_encoder(tiny_bert, objective, steps=10, checkpoint_every=0, unpad=True)
    loop = MethodLoop(method, encoder, seed=0, data=SimpleNamespace(classes=[]))  # type: ignore[arg-type]
    assert all(e.unpad for e in [encoder, *([loop.loss.definitions] if objective == "medse" else [])])
    batch = loop.prepare(SimpleNamespace(batch=lambda step: objective_rows(objective, 13)), 1)  # type: ignore[arg-type]
    assert PACKING in batch["doubled"]
    loop.step(batch)
    with SyncCounter() as counted:
        loop.step(batch)
    assert counted.ops > 200 and dict(counted.syncs) == {}, dict(counted.syncs)


def test_the_knobs_are_checked_when_the_config_is_read() -> None:
    with pytest.raises(InputError, match=r"methods.m.unpad: the unpadded forward does not checkpoint"):
        resolve_method("m", {"objective": "simcse", "unpad": True, "gradient_checkpointing": True}, {}, [0])
    with pytest.raises(
        InputError, match=r"methods.m.varlen_attention: variable-length attention runs on the unpadded"
    ):
        resolve_method("m", {"objective": "simcse", "varlen_attention": True, "unpad": False}, {}, [0])


@pytest.mark.parametrize("static", [False, True])
def test_the_unpadded_step_compiles_as_one_graph(tiny_bert: Path, static: bool) -> None:
    """``compile`` with ``unpad``: one graph (``fullgraph``), the eager loss (aot_eager; two batch
    shapes, so the packing's sizes change between calls); ``static``: a captured run's packing
    (a compiled step is captured too)."""
    from clinsent.train.compiled import compile_loss

    method, encoder = method_and_encoder(
        tiny_bert, "simcse", steps=10, checkpoint_every=0, unpad=True, dropout=False, augmentation="token_shuffle"
    )
    loop = MethodLoop(method, encoder, seed=0, data=SimpleNamespace(classes=[]))  # type: ignore[arg-type]
    loop.loss.use_static_shapes(static)
    compiled = compile_loss(loop.loss, encoder, backend="aot_eager", fullgraph=True)
    for n in (13, 11):
        batch = loop.prepare(SimpleNamespace(batch=lambda step, n=n: objective_rows("simcse", n)), 1)  # type: ignore[arg-type]
        assert (batch["doubled"][PACKING].room > 0) == static
        got, want = compiled(batch)["sentence"], loop.loss(batch)["sentence"]
        assert abs(got.item() - want.item()) <= 1e-5
