"""No host sync in a training step (clinsent.train.syncs): over eager steps on the CPU, the
trainer's step (``MethodLoop.step``: forward, loss, backward, clipping, fused AdamW, schedule)
of every registered objective dispatches no operator that makes the host wait for the device
(``.item()``, a data-dependent shape, a copy to the host); the counter sees them where they are;
fused AdamW (now on the CPU too) gives the for-each one's parameters within 1e-6; and the 4-D
attention mask gives the 2-D one's embeddings."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from clinsent.methods import METHODS
from clinsent.models.encoder import model_inputs
from clinsent.train.loop import MethodLoop
from clinsent.train.syncs import SyncCounter, _names_a_device

from testkit.losses import method_and_encoder, objective_rows

TRAINED = sorted(n for n in METHODS.names() if n != "none")  # every objective that takes a step


def _loop(tiny_bert: Path, objective: str, **knobs: object) -> tuple[MethodLoop, dict]:
    method, encoder = method_and_encoder(tiny_bert, objective, steps=10, checkpoint_every=0, **knobs)
    loop = MethodLoop(method, encoder, seed=0, data=SimpleNamespace(classes=["a", "b", "c"]))  # type: ignore[arg-type]
    batch = loop.loss.prepare(
        objective_rows(objective, 16 if objective == "ct" else 13), torch.Generator().manual_seed(0)
    )
    return loop, batch


@pytest.mark.parametrize("objective", TRAINED)
def test_a_training_step_makes_no_host_sync(tiny_bert: Path, objective: str) -> None:
    loop, batch = _loop(tiny_bert, objective)
    loop.step(batch)  # the first step builds the optimiser's state
    with SyncCounter() as counted:
        for _ in range(2):
            loop.step(batch)
    assert counted.ops > 500 and dict(counted.syncs) == {}, dict(counted.syncs)


@pytest.mark.parametrize("objective", ["medse", "mlm", "note_category"])
def test_a_step_of_static_shapes_makes_no_host_sync(tiny_bert: Path, objective: str) -> None:
    """The batches a captured run makes (MED-SE's entity slots, MLM's masked slots): no host sync either."""
    method, encoder = method_and_encoder(tiny_bert, objective, steps=10, checkpoint_every=0)
    loop = MethodLoop(method, encoder, seed=0, data=SimpleNamespace(classes=["a", "b", "c"]))  # type: ignore[arg-type]
    loop.loss.use_static_shapes(True)
    batch = loop.loss.prepare(objective_rows(objective, 13), torch.Generator().manual_seed(0))
    loop.step(batch)
    with SyncCounter() as counted:
        loop.step(batch)
    assert counted.ops > 200 and dict(counted.syncs) == {}, dict(counted.syncs)


def test_medse_with_the_bilstm_entity_encoder_makes_no_host_sync(tiny_bert: Path) -> None:
    """The bilstm packs its spans by their lengths, which it needs on the host: they come with the
    prepared batch, so the step copies nothing back."""
    loop, batch = _loop(tiny_bert, "medse", entity_encoder="bilstm")
    loop.step(batch)
    with SyncCounter() as counted:
        loop.step(batch)
    assert counted.ops > 200 and dict(counted.syncs) == {}, dict(counted.syncs)


def test_the_counter_sees_syncs() -> None:
    x = torch.arange(6.0)
    with SyncCounter() as c:
        _ = x.max().item()
        _ = x[x > 2]  # a boolean mask: nonzero
        if x.sum():  # bool(tensor)
            pass
        _ = torch.nonzero(x)
    assert dict(c.syncs) == {"aten._local_scalar_dense": 2, "aten.index (boolean mask)": 1, "aten.nonzero": 1}


def test_the_counter_sees_our_blocking_copies_to_a_device() -> None:
    """A ``to(device)`` without ``non_blocking`` in this package's code makes the host wait on
    CUDA (the first H200 gpu-check found two in CT and NT-Xent); on the CPU it dispatches nothing,
    so the counter looks at the call. Probe functions compiled under a path in the package (no
    file is written); a library's own ``to`` is not counted."""
    import clinsent

    where = str(Path(clinsent.__file__).parent / "losses" / "probe.py")
    forms = {
        "blocking": "x.to(d)",
        "by_name": "x.to(device=d)",
        "with_dtype": "x.to(d, torch.float64)",
        "like": "x.to(x)",
        "by_string": "x.to('cpu')",
        "async": "x.to(d, non_blocking=True)",
        "async_positional": "x.to(d, torch.float64, True)",
        "dtype_only": "x.to(torch.float64)",
    }
    found = {}
    for name, expr in forms.items():
        scope: dict = {"torch": torch}
        exec(compile(f"def probe(x, d):\n    return {expr}\n", where, "exec"), scope)
        with SyncCounter() as c:
            scope["probe"](torch.zeros(3), torch.device("cpu"))
        found[name] = sum(c.syncs.values())
    assert found == {k: int(k in ("blocking", "by_name", "with_dtype", "like", "by_string")) for k in forms}
    # Tensor.cuda(device=None, non_blocking=False) cannot run here: its forms, as the counter reads them
    cuda = torch.Tensor.cuda
    assert [_names_a_device(cuda, rest, {}) for rest in ((), (0,), (0, False), (0, True))] == [True, True, True, False]
    with SyncCounter() as c:
        torch.zeros(3).to(torch.device("cpu"))  # not this package's code
    assert dict(c.syncs) == {}


def test_fused_adamw_gives_the_foreach_parameters() -> None:
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 3))
    twin = [p.detach().clone().requires_grad_(True) for p in net.parameters()]
    fused = torch.optim.AdamW(list(net.parameters()), lr=1e-2, weight_decay=0.01, fused=True)
    plain = torch.optim.AdamW(twin, lr=1e-2, weight_decay=0.01, foreach=True)
    x, y = torch.randn(32, 8), torch.randint(0, 3, (32,))
    for _ in range(20):
        for params, opt in ((list(net.parameters()), fused), (twin, plain)):
            h = torch.tanh(x @ params[0].T + params[1]) @ params[2].T + params[3]
            opt.zero_grad()
            torch.nn.functional.cross_entropy(h, y).backward()
            opt.step()
    assert max(float((a - b).detach().abs().max()) for a, b in zip(net.parameters(), twin, strict=True)) <= 1e-6


@pytest.mark.parametrize("attention", ["sdpa", "eager"])
def test_the_4d_mask_gives_the_2d_masks_states(tiny_bert: Path, attention: str) -> None:
    from transformers import AutoModel, AutoTokenizer

    model = AutoModel.from_pretrained(str(tiny_bert), attn_implementation=attention).eval()
    tok = AutoTokenizer.from_pretrained(str(tiny_bert))
    inputs = dict(
        tok(["a short one", "a much longer sentence with more words in it"], padding=True, return_tensors="pt")
    )
    prepared = model_inputs(model, inputs)
    assert prepared["attention_mask"].dim() == 4
    with torch.no_grad():
        want = model(**inputs).last_hidden_state
        got = model(**prepared).last_hidden_state
    real = inputs["attention_mask"].bool()
    assert float((want[real] - got[real]).abs().max()) <= 1e-5
