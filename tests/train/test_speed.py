"""``auto`` for the speed knobs (clinsent.gpu.speed): off on the CPU, on CUDA only where a GPU check's
figures (its own file, per knob and objective) showed the knob faster by more than the spread with
its CUDA tests passed, turned on by a request that needs it, and off
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


PASSED = {"its CUDA test": "passed"}


def _figures(**knobs: dict[str, tuple[float, dict[str, str]]]) -> dict[str, object]:
    """An auto.json of the check's format: knob -> objective -> (ratio, tests)."""
    return {"knobs": {k: {o: {"ratio": r, "tests": t} for o, (r, t) in v.items()} for k, v in knobs.items()}}


def test_the_shipped_figures_are_the_checks_own_and_turn_graphs_on_for_three_objectives() -> None:
    """No figure written by hand: the package's auto.json is the check's file byte for byte, of the
    commit the code names; until a GPU check of the code as it is, 2026-11-28's figures decide:
    graphs on for SimCSE, MED-SE and supervised SimCSE, every other knob and objective off."""
    repo = Path(__file__).resolve().parents[2]
    assert speed.FIGURES.read_bytes() == (repo / speed.FROM_CHECK).read_bytes()
    assert speed.figures()["commit"] == speed.FROM_COMMIT
    on = {
        (k, o)
        for k in speed.KNOBS
        for o in ("simcse", "medse", "sup_simcse", "mnr", "mlm", "ct")
        if speed.decide(k, o)
    }
    assert on == {("graphs", "simcse"), ("graphs", "medse"), ("graphs", "sup_simcse")}


def test_auto_is_decided_per_knob_and_objective_from_the_checks_figures(monkeypatch: pytest.MonkeyPatch) -> None:
    found = _figures(
        compile={"simcse": (0.70, PASSED)},  # 0.70 < 1 - 0.15: faster
        unpad={"simcse": (0.90, PASSED)},  # within the spread: not
        graphs={"simcse": (0.28, PASSED), "mlm": (0.30, {"its CUDA test": "failed"})},  # mlm's test failed
        grouped={"medse": (0.70, {"its CUDA test": "not run"})},  # its test did not run in that check
    )
    asked = [("compile", "simcse"), ("unpad", "simcse"), ("graphs", "simcse"), ("graphs", "mlm"), ("grouped", "medse")]
    assert [speed.decide(k, o, found) for k, o in asked] == [True, False, True, False, False]
    assert not speed.decide("graphs", "medse", found)  # not measured
    monkeypatch.setattr(speed, "figures", lambda: found)
    s = _settings()
    assert (s.compile, s.unpad, s.graphs) == ("auto", "auto", "auto")
    on_cuda, on_cpu = speed.resolved(s, "cuda", "simcse"), speed.resolved(s, "cpu", "simcse")
    assert (on_cuda.compile, on_cuda.unpad, on_cuda.graphs) == (True, False, True)
    assert (on_cpu.compile, on_cpu.unpad, on_cpu.graphs) == (False, False, False)
    assert speed.resolved(s, "cuda", "ct").graphs is False  # never captured on a GPU: stays eager
    assert speed.resolved(_settings(compile=False), "cuda", "simcse").compile is False  # an explicit value stays
    assert speed.resolved(_settings(graphs=False), "cuda", "simcse").graphs is False


def test_grouped_auto_follows_its_figure_and_gives_way_to_checkpointing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(speed, "figures", lambda: _figures())  # nothing measured: off everywhere
    assert speed.resolved(_settings(), "cuda", "medse").grouped is False
    monkeypatch.setattr(speed, "figures", lambda: _figures(grouped={"medse": (0.70, PASSED)}))
    assert speed.resolved(_settings(), "cuda", "medse").grouped is True
    assert speed.resolved(_settings(), "cpu", "medse").grouped is False
    assert speed.resolved(_settings(gradient_checkpointing=True), "cuda", "medse").grouped is False
    assert speed.resolved(_settings(grouped=True), "cpu", "medse").grouped is True  # an explicit value stays


def test_an_unreadable_figures_file_turns_every_auto_off(tmp_path: Path) -> None:
    bad = tmp_path / "auto.json"
    bad.write_text("{not json")
    assert speed.figures(bad) == {"knobs": {}} and not speed.decide("graphs", "simcse", speed.figures(bad))


def test_a_request_turns_auto_on_and_only_an_explicit_conflict_is_refused() -> None:
    assert speed.resolved(_settings(varlen_attention=True), "cpu", "simcse").unpad is True
    assert speed.resolved(_settings(compile_mode="max-autotune"), "cpu", "simcse").compile is True
    assert speed.resolved(_settings(), "cpu", "simcse").graphs is False  # graphs' auto: off on the CPU
    with pytest.raises(InputError, match="reduce-overhead.*means default, with graphs: true"):
        _settings(compile_mode="reduce-overhead")  # the CUDA graph is the graphs knob's now, the whole step
    assert speed.resolved(_settings(gradient_checkpointing=True), "cuda", "simcse").unpad is False
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
