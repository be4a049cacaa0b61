"""The GPU paths on a GPU (``pytest -m cuda``; ``make gpu-check`` runs them): one test per path
that the CPU suite can only approximate. Where CUDA is absent each is skipped with its reason,
and CI still collects them, so they import and stay current.

Tolerances, stated once (relative to each tensor's largest magnitude, where that exceeds 1):

- :data:`FP32` 1e-5: float32 with TF32 off, the CPU suite's bound;
- :data:`TF32` 5e-3: TF32 matmuls keep 10 bits of mantissa (about 1e-3 per product);
- :data:`BF16` 5e-2: bf16 autocast keeps 8 bits (about 4e-3 per product), and a chunk's GEMMs
  are tiled otherwise than the whole batch's;
- :data:`DEVICES` 1e-4: float32 on CUDA against the CPU (other reduction orders);
- :data:`COMPILED` 1e-4: inductor's fused kernels against eager, float32.

``CLINSENT_CUDA_TESTS_ON_CPU=1`` runs every body on the CPU, the CUDA-only assertions left out:
for working on these tests on a machine without a GPU, not a substitute for running them on one.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
import torch

from clinsent.losses.base import Embedded, MethodLoss
from clinsent.methods import METHODS
from clinsent.models.base import load_transformer
from clinsent.models.encoder import Encoder
from clinsent.train.chunked import cached_step
from clinsent.train.loop import MethodLoop
from clinsent.train.prefetch import pinned
from clinsent.train.syncs import SyncCounter

from testkit.losses import (
    clinical_texts,
    loss_and_batch,
    method_and_encoder,
    objective_rows,
    one_pass,
    take_grads,
    trainable_params,
    two_passes,
)

ON_CPU = "CLINSENT_CUDA_TESTS_ON_CPU"
CUDA = torch.cuda.is_available()
DEVICE = torch.device("cuda") if CUDA else torch.device("cpu")
pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(
        not CUDA and not os.environ.get(ON_CPU),
        reason="no CUDA device here: these run on a GPU machine (make gpu-check)",
    ),
]
FP32, TF32, BF16, DEVICES, COMPILED = 1e-5, 5e-3, 5e-2, 1e-4, 1e-4
TRAINED = sorted(n for n in METHODS.names() if n != "none")
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def tf32_off() -> Iterator[None]:
    """Exact float32 matmuls for the test (restored after)."""
    before = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    yield
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = before


def _on(
    tiny_bert: Path, objective: str, device: torch.device, precision: str = "fp32", **knobs: Any
) -> tuple[Any, Encoder]:
    """The objective's method (batch 13, length 32) and its encoder moved to ``device``, with ``precision``."""
    method, cpu = method_and_encoder(tiny_bert, objective, **knobs)
    s = method.settings
    return method, Encoder(
        cpu.model.to(device), cpu.tokenizer, s.pooling, s.first_layer, s.max_length, device, precision=precision
    )


def _loss(
    tiny_bert: Path, objective: str, device: torch.device, precision: str = "fp32", dropout: bool = False
) -> tuple[MethodLoss, Encoder, dict[str, Any]]:
    method, encoder = _on(tiny_bert, objective, device, precision)
    return loss_and_batch(method, encoder, objective, dropout)


def _one_pass(loss: MethodLoss, batch: dict[str, Any]) -> dict[str, torch.Tensor]:
    """The one-pass step (testkit.losses), its parts brought to the CPU as float32."""
    return {k: v.float().cpu() for k, v in one_pass(loss, batch).items()}


def _close(want: dict[str, torch.Tensor], got: dict[str, torch.Tensor], tolerance: float) -> None:
    assert want.keys() == got.keys()
    moved = [k for k, g in want.items() if float(g.abs().max()) > 0]
    assert len(moved) > len(want) // 2  # the comparison is not between zeros
    for k, a in want.items():
        a, b = a.float().cpu(), got[k].float().cpu()
        assert float((a - b).abs().max()) <= tolerance * max(1.0, float(a.abs().max())), (k, tolerance)


def test_a_job_given_a_slot_sees_exactly_that_device(tmp_path: Path) -> None:
    """A job of the pool (the last visible device, so not the default one where there are several)
    takes its slot before torch starts CUDA: it sees that device alone, named in its `gpu slot:`
    line and in its hardware record."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    entries = [e for e in visible.split(",") if e] if visible else [str(i) for i in range(torch.cuda.device_count())]
    device = entries[-1] if entries else "0"
    code = (
        "from clinsent.gpu.slots import take_slot\n"
        "take_slot(True, log=print)\n"
        "import torch\n"
        "from clinsent.gpu.hardware import hardware_record\n"
        "cuda = torch.cuda.is_available()\n"
        "record = hardware_record(torch.device('cuda' if cuda else 'cpu'), 'bf16')\n"
        "print('COUNT', torch.cuda.device_count())\n"
        "print('SLOT', record['gpu_slot'])\n"
        "print('NAME', record['device_name'])\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "CUDA_VISIBLE_DEVICES"}
    env |= {"CLINSENT_GPU_POOL": device, "CLINSENT_GPU_POOL_FROM_CONFIG": "1", "CLINSENT_GPU_LOCK_DIR": str(tmp_path)}
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    lines = dict(line.split(" ", 1) for line in run.stdout.splitlines() if line.startswith(("COUNT", "SLOT", "NAME")))
    assert f"gpu slot: {device}" in run.stdout and lines["SLOT"] == device
    if CUDA:
        assert lines["COUNT"] == "1"
        assert lines["NAME"] == torch.cuda.get_device_name(entries.index(device))


@pytest.mark.parametrize("numerics", ["fp32", "tf32", "bf16"])
@pytest.mark.parametrize("objective", ["simcse", "medse", "sup_simcse", "mnr"])
def test_the_cached_step_gives_the_one_pass_step(tiny_bert: Path, objective: str, numerics: str) -> None:
    """``mini_batch`` on the device, deterministic views: the one-pass step's loss and gradients
    (float32 within :data:`FP32` with TF32 off; :data:`TF32` and :data:`BF16` otherwise)."""
    before = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = numerics == "tf32"
    try:
        loss, encoder, batch = _loss(tiny_bert, objective, DEVICE, "bf16" if numerics == "bf16" else "fp32")
        params = trainable_params(loss, encoder)
        plain = _one_pass(loss, batch)
        g_plain = take_grads(params)
        chunked = {k: v.float().cpu() for k, v in cached_step(loss, batch, 5, DEVICE).items()}
        g_chunked = take_grads(params)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = before
    tolerance = {"fp32": FP32, "tf32": TF32, "bf16": BF16}[numerics if CUDA or numerics == "bf16" else "fp32"]
    for k in plain:
        assert abs(float(plain[k]) - float(chunked[k])) <= tolerance * max(1.0, abs(float(plain[k]))), k
    _close(g_plain, g_chunked, tolerance)


def test_each_chunks_two_passes_draw_the_same_masks_from_the_device_generator(tiny_bert: Path) -> None:
    """SimCSE with dropout on: the gradient pass replays the device generator's state of the
    no-gradient pass, so each chunk's vectors are the same twice (and the two views differ)."""
    loss, encoder, batch = _loss(tiny_bert, "simcse", DEVICE, dropout=True)
    pairs: list[tuple[Embedded, Embedded]] = []

    def state() -> torch.Tensor:
        return torch.cuda.get_rng_state(DEVICE) if CUDA else torch.get_rng_state()

    before = state()
    pairs = two_passes(loss, lambda: cached_step(loss, batch, 4, DEVICE))
    assert len(pairs) == 4
    for first, again in pairs:
        for k in ("z1", "z2"):
            assert float((first.vectors[k] - again.vectors[k].detach()).abs().max()) <= 1e-6
        assert float((first.vectors["z1"] - first.vectors["z2"]).abs().max()) > 1e-3  # dropout made two views
    assert not torch.equal(before, state())  # the masks came from the device's generator


def _trained(tiny_bert: Path, objective: str, precision: str, **knobs: Any) -> tuple[MethodLoop, dict[str, Any]]:
    method, encoder = _on(tiny_bert, objective, DEVICE, precision, steps=40, checkpoint_every=0, **knobs)
    loop = MethodLoop(method, encoder, seed=0, data=SimpleNamespace(classes=["a", "b", "c"]))  # type: ignore[arg-type]
    batch = loop.loss.prepare(
        objective_rows(objective, 16 if objective == "ct" else 13), torch.Generator().manual_seed(0)
    )
    return loop, pinned(batch) if CUDA else batch


@pytest.mark.parametrize("precision", ["bf16", "fp16"])
def test_a_mixed_precision_step_trains_and_fp16_skips_an_overflow(tiny_bert: Path, precision: str) -> None:
    """Supervised SimCSE on a fixed batch: the loss falls over 20 steps in bf16 and in fp16 (with
    its gradient scaler). fp16: a step whose gradients overflow (forced: one gradient made
    infinite) is skipped, counted and leaves every parameter as it was."""
    loop, batch = _trained(tiny_bert, "sup_simcse", precision, learning_rate=1e-3, dropout=False)
    losses = [float(loop.step(batch)["loss"]) for _ in range(20)]
    assert np.isfinite(losses).all() and losses[-1] < 0.95 * losses[0], losses  # CPU bf16: 3.26 -> 2.97
    if precision != "fp16":
        return
    assert loop.optimisation.scaler is not None and loop.optimisation.skipped == 0
    first = loop.params[0]
    hook = first.register_hook(lambda g: torch.full_like(g, float("inf")))
    kept = [p.detach().clone() for p in loop.params]
    loop.step(batch)
    hook.remove()
    assert loop.optimisation.skipped == 1
    assert all(torch.equal(a, b.detach()) for a, b in zip(kept, loop.params, strict=True))
    loop.step(batch)
    assert loop.optimisation.skipped == 1 and not torch.equal(kept[1], loop.params[1].detach())


@pytest.mark.usefixtures("tf32_off")
@pytest.mark.parametrize("objective", ["simcse", "medse", "sup_simcse"])
def test_fp32_on_the_device_equals_fp32_on_the_cpu(tiny_bert: Path, objective: str) -> None:
    """One pass, deterministic views: the loss parts and every gradient on CUDA within
    :data:`DEVICES` of the CPU's."""
    results = []
    for device in (torch.device("cpu"), DEVICE):
        loss, encoder, batch = _loss(tiny_bert, objective, device)
        parts = _one_pass(loss, batch)
        results.append((parts, {k: v.cpu() for k, v in take_grads(trainable_params(loss, encoder)).items()}))
    (cpu_parts, cpu_grads), (dev_parts, dev_grads) = results
    for k in cpu_parts:
        assert abs(float(cpu_parts[k]) - float(dev_parts[k])) <= DEVICES * max(1.0, abs(float(cpu_parts[k]))), k
    _close(cpu_grads, dev_grads, DEVICES)


def _steady_steps(loop: MethodLoop, batch: dict[str, Any]) -> SyncCounter:
    """Three steps of ``batch`` after two warm-up steps, under ``torch.cuda.set_sync_debug_mode(
    "error")`` (any synchronising call raises) and the dispatch counter."""
    for _ in range(2):
        loop.step(batch)
    if CUDA:
        torch.cuda.synchronize()
        torch.cuda.set_sync_debug_mode("error")
    try:
        with SyncCounter() as counted:
            for _ in range(3):
                loop.step(batch)
    finally:
        if CUDA:
            torch.cuda.set_sync_debug_mode(0)
    return counted


@pytest.mark.parametrize("objective", TRAINED)
def test_no_host_sync_in_the_steady_state_step(tiny_bert: Path, objective: str) -> None:
    """Every trained objective, its batch pinned as the prefetching thread pins it: no host sync in
    its steady steps (:func:`_steady_steps`). bf16 where the card has it (fp16's scaler reads its
    scale to count a skipped step: that sync is the skip count's)."""
    capable = CUDA and torch.cuda.get_device_capability(DEVICE)[0] >= 8
    loop, batch = _trained(tiny_bert, objective, "bf16" if capable else "fp32")
    counted = _steady_steps(loop, batch)
    assert counted.ops > 300 and dict(counted.syncs) == {}, dict(counted.syncs)


@pytest.mark.parametrize("static", [False, True])
def test_an_unpadded_step_makes_no_host_sync(tiny_bert: Path, static: bool) -> None:
    """The unpadded forward's packing made with the batch (``static``: as a captured run makes it)
    and pinned with it, as the trainer's ``prepare`` does: no host sync in the steady steps."""
    from clinsent.models.unpadded import attach

    capable = CUDA and torch.cuda.get_device_capability(DEVICE)[0] >= 8
    loop, batch = _trained(tiny_bert, "simcse", "bf16" if capable else "fp32", unpad=True)
    batch = attach(batch, static)
    counted = _steady_steps(loop, pinned(batch) if CUDA else batch)
    assert counted.ops > 300 and dict(counted.syncs) == {}, dict(counted.syncs)


@pytest.mark.parametrize("unpad", [False, True])
def test_a_grouped_medse_step_makes_no_host_sync(tiny_bert: Path, unpad: bool) -> None:
    """MED-SE's two encoders as one grouped pass (``grouped``; bf16, the grouped product's dtype on
    CUDA), padded and on the real tokens: it runs grouped, and no host sync in its steady steps."""
    from clinsent.models.unpadded import attach

    capable = CUDA and torch.cuda.get_device_capability(DEVICE) >= (9, 0)
    if CUDA and not capable:
        pytest.skip("the grouped product runs without a host sync from compute capability 9.0 on")
    loop, batch = _trained(tiny_bert, "medse", "bf16", grouped=True, unpad=unpad)
    assert loop.loss.grouped
    batch = attach(batch, True) if unpad else batch
    counted = _steady_steps(loop, pinned(batch) if CUDA else batch)
    assert counted.ops > 300 and dict(counted.syncs) == {}, dict(counted.syncs)


def test_grouped_encoders_equal_each_models_own_in_bf16(tiny_bert: Path) -> None:
    """Eval mode, bf16: the sentence and definition encoders' states from one grouped pass (the
    grouped product's kernel on CUDA) equal each model's own forward's within :data:`BF16`."""
    t, d = load_transformer(str(tiny_bert), 32), load_transformer(str(tiny_bert), 32)
    with torch.no_grad():
        for p in d.model.parameters():
            p.add_(0.05 * torch.randn_like(p))
    a = Encoder(t.model.to(DEVICE).eval(), t.tokenizer, "first_last", 1, 32, DEVICE, precision="bf16")
    b = Encoder(d.model.to(DEVICE).eval(), d.tokenizer, "first_last", 1, 32, DEVICE, precision="bf16")
    sentences = a.tokenize(clinical_texts(11))
    definitions = b.tokenize([f"A disease of the body number {i}." for i in range(5)])
    with torch.no_grad():
        want = (a.embed_batch(sentences).float().cpu(), b.embed_batch(definitions).float().cpu())
        mine, theirs = a.hidden_states_beside(sentences, b, definitions)
        got = (a.pooled(mine, sentences).float().cpu(), b.pooled(theirs, definitions).float().cpu())
    for x, y in zip(want, got, strict=True):
        assert float((x - y).abs().max()) <= BF16 * max(1.0, float(x.abs().max()))


def test_unpadded_layers_with_varlen_attention_equal_the_padded_encoder(tiny_bert: Path) -> None:
    """Eval mode, bf16: the unpadded forward with torch's variable-length flash attention gives the
    padded encoder's embeddings within :data:`BF16` (on CUDA the varlen kernel runs; on the CPU
    attention stays padded)."""
    from clinsent.models.unpadded import attach, varlen_fallback_note

    t = load_transformer(str(tiny_bert), 32)
    padded = Encoder(t.model.to(DEVICE).eval(), t.tokenizer, "first_last", 1, 32, DEVICE, precision="bf16")
    unpadded = Encoder(t.model, t.tokenizer, "first_last", 1, 32, DEVICE, precision="bf16")
    unpadded.unpad = unpadded.varlen = True
    batch = padded.tokenize(clinical_texts(11))
    with torch.no_grad():
        a = padded.embed_batch(batch).float().cpu()
        b = unpadded.embed_batch(attach(dict(batch))).float().cpu()
    assert float((a - b).abs().max()) <= BF16 * max(1.0, float(a.abs().max()))
    assert (varlen_fallback_note(DEVICE) is None) == CUDA


@pytest.mark.usefixtures("tf32_off")
@pytest.mark.parametrize("mode", ["default"])
def test_the_compiled_step_equals_eager_and_compiles_once_per_length_bucket(tiny_bert: Path, mode: str) -> None:
    """inductor: the compiled forward's loss parts and gradients within :data:`COMPILED` of eager,
    float32; three batches of two length buckets compile at most two graphs (the whole step as a
    CUDA graph is the ``graphs`` knob's: the tests below)."""
    from torch._dynamo.utils import counters

    from clinsent.train.compiled import compile_loss

    torch._dynamo.reset()
    counters.clear()
    method, encoder = _on(
        tiny_bert, "simcse", DEVICE, steps=10, checkpoint_every=0, dropout=False, augmentation="token_cutoff"
    )
    loop = MethodLoop(method, encoder, seed=0, data=SimpleNamespace(classes=[]))  # type: ignore[arg-type]
    compiled = compile_loss(loop.loss, encoder, mode=mode)
    loop.loss.eval()
    short = [" ".join(t.split()[:4]) for t in clinical_texts(13)]  # at most 16 tokens: one bucket
    texts = {"short": short, "also short": [t.replace("has", "had") for t in short], "long": clinical_texts(13)}
    for texts_of in texts.values():
        batch = loop.loss.prepare(_rows_of(texts_of), torch.Generator().manual_seed(0))
        want, want_grads = _parts_and_grads(loop.loss, loop, batch)
        got, got_grads = _parts_and_grads(compiled, loop, batch)
        _close(want, got, COMPILED)
        for a, b in zip(want_grads, got_grads, strict=True):
            assert float((a - b).abs().max()) <= COMPILED * max(1.0, float(a.abs().max()))
    graphs = counters["stats"]["unique_graphs"]
    assert 1 <= graphs <= 2, dict(counters["stats"])
    torch._dynamo.reset()


def _rows_of(texts: list[str]) -> Any:
    import pandas as pd

    return pd.DataFrame({"text": texts})


def _parts_and_grads(forward: Any, loop: MethodLoop, batch: dict[str, Any]) -> tuple[dict[str, Any], list[Any]]:
    for p in loop.params:
        p.grad = None
    parts = forward(batch)
    torch.stack([v.float() for v in parts.values()]).sum().backward()
    return {k: v.detach().float().cpu().clone() for k, v in parts.items()}, [
        p.grad.detach().cpu().clone() for p in loop.params if p.grad is not None
    ]


def _captured_run(
    tiny_bert: Path, tmp_path: Path, objective: str, graphs: bool, precision: str = "fp32", **knobs: Any
) -> tuple[list[float], list[torch.Tensor], MethodLoop, Any]:
    """Ten steps from token files (two length buckets), captured per shape or eager: the losses,
    the parameters after, the loop and its data."""
    from testkit.losses import token_plan, token_rows

    if objective == "sup_simcse":
        data = token_rows(tmp_path / objective, tiny_bert, batch=8, max_length=32)
    else:
        data = token_plan(
            tmp_path / objective, tiny_bert, steps=10, batch=8, max_length=32, entities=objective == "medse"
        )
    torch.manual_seed(0)
    method, encoder = _on(
        tiny_bert, objective, DEVICE, precision, steps=10, checkpoint_every=0, batch_size=8, graphs=graphs,
        length_buckets=2, **knobs,
    )  # fmt: skip
    loop = MethodLoop(method, encoder, seed=0, data=data, log=lambda _: None)
    loop.loss.use_static_shapes(True)  # the eager run's shapes as the captured run's (MED-SE's entity slots)
    losses = [float(loop.advance(step, loop.prepare(data, step))["loss"]) for step in range(1, 11)]
    return losses, [p.detach().float().cpu().clone() for p in loop.params], loop, data


@pytest.mark.usefixtures("tf32_off")
@pytest.mark.parametrize(
    "objective", ["simcse", "medse", "sup_simcse", "mlm", "simcse:unpad", "simcse:unpad:varlen_attention"]
)
def test_a_captured_run_ends_where_the_eager_run_ends(tiny_bert: Path, tmp_path: Path, objective: str) -> None:
    """The whole step captured once per shape (``graphs: true``: forward, loss, backward, clipping,
    capturable fused AdamW; MED-SE's definition encoder on its side stream; MLM's masked positions
    in their fixed slots; the unpadded forward's static packing, with torch's variable-length
    attention over its dummy sequences too) and replayed: ten steps of float32 with dropout off
    give the eager run's losses and parameters within :data:`FP32`, with one capture per shape
    seen twice."""
    objective, *switches = objective.split(":")
    knobs: dict[str, Any] = {"dropout": False, **dict.fromkeys(switches, True)}
    if objective in ("simcse", "medse"):
        knobs["augmentation"] = "token_cutoff"  # two views without dropout
    want, want_params, _, _ = _captured_run(tiny_bert, tmp_path / "eager", objective, False, **knobs)
    got, got_params, loop, _ = _captured_run(tiny_bert, tmp_path / "captured", objective, True, **knobs)
    if CUDA:  # two buckets (unpadded: each with a few token counts)
        assert loop.graphs is not None and 1 <= len(loop.graphs.graphs) <= (6 if switches else 2)
    assert got == pytest.approx(want, rel=FP32, abs=FP32)
    for a, b in zip(want_params, got_params, strict=True):
        assert float((a - b).abs().max()) <= FP32 * max(1.0, float(a.abs().max()))


def test_a_replayed_step_draws_new_dropout_masks_and_makes_no_host_sync(tiny_bert: Path, tmp_path: Path) -> None:
    """With dropout on, bf16 where the card has it: a replay draws its masks from the CUDA generator
    anew, and replays make no host sync (under ``torch.cuda.set_sync_debug_mode("error")``). The
    parameters are held fixed (the learning rate and its schedule at 0, checked after the replays),
    so two replays of one batch can differ by their masks alone."""
    capable = CUDA and torch.cuda.get_device_capability(DEVICE)[0] >= 8
    _, _, loop, data = _captured_run(tiny_bert, tmp_path, "simcse", True, "bf16" if capable else "fp32")
    scheduler = loop.optimisation.scheduler
    scheduler.lr_lambdas = [lambda _step: 0.0 for _ in scheduler.lr_lambdas]  # every later step's rate: 0
    for group in loop.optimisation.optimizer.param_groups:
        if isinstance(group["lr"], torch.Tensor):
            group["lr"].fill_(0.0)  # the captured step reads this tensor
        else:
            group["lr"] = 0.0
    before = [p.detach().clone() for p in loop.params]
    batch = loop.prepare(data, 1)
    if CUDA:
        torch.cuda.synchronize()
        torch.cuda.set_sync_debug_mode("error")
    try:
        first, second = (loop.step(batch)["loss"].detach().clone() for _ in range(2))  # no sync: copies
    finally:
        if CUDA:
            torch.cuda.set_sync_debug_mode(0)
    assert all(torch.equal(a, p.detach()) for a, p in zip(before, loop.params, strict=True))  # held fixed
    assert float(first) != float(second)  # the same batch and parameters: only the masks differ


def test_the_hardware_record_names_the_device() -> None:
    from clinsent.gpu.hardware import describe, hardware_record

    record = hardware_record(DEVICE, "bf16")
    assert record["device"] == DEVICE.type and record["torch"] == torch.__version__ and record["precision"] == "bf16"
    if CUDA:
        assert record["device_name"] == torch.cuda.get_device_name(torch.cuda.current_device())
        assert re.fullmatch(r"\d+\.\d+", record["compute_capability"]) and record["cuda"] == torch.version.cuda
        assert isinstance(record["cudnn"], int) and record["cudnn"] > 0
        assert f"CUDA {record['cuda']}" in describe(record)


def test_embed_on_the_device_equals_the_cpu_vectors(tmp_path: Path, tiny_bert: Path) -> None:
    """``python -m clinsent embed --device cuda`` against ``--device cpu`` on a saved
    sentence-transformers model (the tiny BERT, mean pooling: a GPU machine need not have the
    packaged MiniLM): float32 on both, cosine distance at most :data:`DEVICES`."""
    import pyarrow.parquet as pq

    from clinsent.models.base import sentence_transformer

    source = tmp_path / "texts.txt"
    source.write_text("\n".join(clinical_texts(40)) + "\n")
    model = str(tmp_path / "model")
    sentence_transformer(load_transformer(str(tiny_bert), 32), "mean", device="cpu").save(model)
    vectors = []
    for device in ("cpu", DEVICE.type):
        out = tmp_path / f"{device}-{len(vectors)}.parquet"
        run = subprocess.run(
            [sys.executable, "-m", "clinsent", "embed", "--model", model, "--input", str(source), "--out", str(out),
             "--device", device, "--batch-size", "8"],
            capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        assert run.returncode == 0, run.stderr[-3000:]
        vectors.append(np.stack(pq.read_table(out).column("vector").to_numpy(zero_copy_only=False)))
    a, b = vectors
    cos = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    assert float((1 - cos).max()) <= DEVICES
