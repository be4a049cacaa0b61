"""``auto`` for the speed knobs (clinsent.gpu.speed): off on the CPU, on CUDA only where a measurement
showed the knob faster by more than the spread, turned on by a request that needs it, and off
beside gradient checkpointing; only an explicit conflicting pair is refused; a config plans the
same wherever it is read (the train params hold ``auto``), and the train loop runs the resolved
values."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from clinsent.errors import InputError
from clinsent.gpu import speed
from clinsent.train.loop import MethodLoop

from testkit.losses import method_and_encoder
from testkit.methods import resolve_method


def _settings(**knobs: object) -> object:
    return resolve_method("m", {"objective": "simcse", **knobs}, {}, [0]).method.settings


def test_auto_is_off_on_the_cpu_and_follows_the_measurement_on_cuda(monkeypatch: pytest.MonkeyPatch) -> None:
    s = _settings()
    assert (s.compile, s.unpad) == ("auto", "auto")
    for device in ("cpu", "cuda"):  # nothing measured yet: off everywhere
        assert (speed.resolved(s, device).compile, speed.resolved(s, device).unpad) == (False, False)
    monkeypatch.setitem(speed.MEASURED, "compile", (0.70, "a test's figure"))  # 0.70 < 1 - 0.15: faster
    monkeypatch.setitem(speed.MEASURED, "unpad", (0.90, "a test's figure"))  # within the spread: not
    on_cuda, on_cpu = speed.resolved(s, "cuda"), speed.resolved(s, "cpu")
    assert (on_cuda.compile, on_cuda.unpad) == (True, False) and (on_cpu.compile, on_cpu.unpad) == (False, False)
    assert speed.resolved(_settings(compile=False), "cuda").compile is False  # an explicit value stays


def test_graphs_auto_follows_its_cuda_measurement(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(speed.MEASURED, "graphs", None)  # not measured: off everywhere
    assert speed.resolved(_settings(), "cuda").graphs is False
    monkeypatch.setitem(speed.MEASURED, "graphs", (0.28, "a test's figure"))  # the H200's: faster
    assert speed.resolved(_settings(), "cuda").graphs is True
    assert speed.resolved(_settings(), "cpu").graphs is False
    assert speed.resolved(_settings(graphs=False), "cuda").graphs is False  # an explicit value stays


def test_grouped_auto_follows_its_cuda_measurement_and_gives_way_to_checkpointing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(speed.MEASURED, "grouped", None)  # not measured: off everywhere
    assert speed.resolved(_settings(), "cuda").grouped is False
    monkeypatch.setitem(speed.MEASURED, "grouped", (0.70, "a test's figure"))
    assert speed.resolved(_settings(), "cuda").grouped is True
    assert speed.resolved(_settings(), "cpu").grouped is False
    assert speed.resolved(_settings(gradient_checkpointing=True), "cuda").grouped is False
    assert speed.resolved(_settings(grouped=True), "cpu").grouped is True  # an explicit value stays


def test_a_request_turns_auto_on_and_only_an_explicit_conflict_is_refused() -> None:
    assert speed.resolved(_settings(varlen_attention=True), "cpu").unpad is True
    assert speed.resolved(_settings(compile_mode="max-autotune"), "cpu").compile is True
    assert speed.resolved(_settings(), "cpu").graphs is False  # graphs' auto: off on the CPU
    with pytest.raises(InputError, match="reduce-overhead.*means default, with graphs: true"):
        _settings(compile_mode="reduce-overhead")  # the CUDA graph is the graphs knob's now, the whole step
    assert speed.resolved(_settings(gradient_checkpointing=True), "cuda").unpad is False
    refused = [
        ({"unpad": True, "gradient_checkpointing": True}, "methods.m.unpad: the unpadded forward"),
        ({"grouped": True, "gradient_checkpointing": True}, "methods.m.grouped: the grouped pass"),
        ({"unpad": False, "varlen_attention": True}, "methods.m.varlen_attention: variable-length"),
        ({"varlen_attention": True, "gradient_checkpointing": True}, "methods.m.varlen_attention: variable-length"),
        ({"compile": False, "compile_mode": "max-autotune"}, "methods.m.compile_mode: torch.compile's mode"),
    ]
    for knobs, message in refused:
        with pytest.raises(InputError, match=message):
            _settings(**knobs)
    for value in ("yes", 1):
        with pytest.raises(InputError, match=r"methods.m.compile: .* is not valid"):
            _settings(compile=value)


def test_the_loop_runs_the_resolved_values_and_the_plan_keeps_auto(tiny_bert: Path) -> None:
    from clinsent.door.open import open_plan

    method, encoder = method_and_encoder(tiny_bert, "simcse", steps=2, checkpoint_every=0)
    loop = MethodLoop(method, encoder, seed=0, data=SimpleNamespace(classes=[]))  # type: ignore[arg-type]
    assert (loop.s.compile, loop.s.unpad) == (False, False) and not encoder.unpad
    plan = open_plan(str(Path(__file__).resolve().parents[2] / "config" / "config.yaml"), {})
    settings = plan.train_params("simcse", "minilm", 0)["method"]["settings"]
    assert (settings["compile"], settings["unpad"]) == ("auto", "auto")
