"""The precision knob (clinsent.gpu.precision): what ``auto`` resolves to, the names it refuses with
the one they mean, and the fp16 path's gradient scaler in the optimisation core: a step whose
gradients overflowed is skipped, learning-rate schedule included (a stub scaler reporting
overflow, and torch's own GradScaler on the CPU)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
import torch

from clinsent.config.sections import RunConfig
from clinsent.errors import InputError
from clinsent.finetune.config import resolve_finetunes
from clinsent.gpu.precision import autocast, grad_scaler, resolve
from clinsent.optimisation import Optimisation

from testkit.methods import resolve_method


def test_auto_is_fp32_on_the_cpu_and_follows_the_compute_capability_on_cuda(monkeypatch: pytest.MonkeyPatch) -> None:
    cpu = torch.device("cpu")
    assert resolve("auto", cpu) == "fp32" and resolve("bf16", cpu) == "bf16" and grad_scaler(cpu, "auto") is None
    cuda = SimpleNamespace(type="cuda")
    for capability, expected in (((9, 0), "bf16"), ((8, 0), "bf16"), ((7, 5), "fp16"), ((7, 0), "fp16")):
        monkeypatch.setattr(torch.cuda, "get_device_capability", lambda _d=None, c=capability: c)
        assert resolve("auto", cuda) == expected
    with autocast(cpu, "bf16"):
        assert torch.get_autocast_dtype("cpu") == torch.bfloat16 and torch.is_autocast_enabled("cpu")
    with autocast(cpu, "fp32"):
        assert not torch.is_autocast_enabled("cpu")


@pytest.mark.parametrize(
    ("value", "meant"), [("half", "fp16"), ("float16", "fp16"), ("bfloat16", "bf16"), ("float32", "fp32")]
)
def test_other_names_are_refused_with_the_one_they_mean(value: str, meant: str) -> None:
    with pytest.raises(InputError) as err:
        resolve_method("m", {"objective": "simcse", "precision": value}, {}, [0])
    text = str(err.value)
    assert text.startswith("config: methods.m.precision: ") and "['auto', 'bf16', 'fp16', 'fp32']" in text
    assert text.endswith(f"({value!r} means {meant}). Fix: write precision: {meant}")
    entry = resolve_method("m", {"objective": "simcse", "precision": "bf16"}, {}, [0])
    assert entry.method.settings.precision == "bf16"
    shared = resolve_method("m", {"objective": "mlm"}, {"precision": "fp16"}, [0])  # a shared training knob
    assert shared.method.settings.precision == "fp16"


def test_a_fine_tune_entry_takes_precision_and_refuses_half() -> None:
    sets = {"tr": SimpleNamespace(task="sts"), "va": SimpleNamespace(task="sts"), "te": SimpleNamespace(task="sts")}
    config: dict[str, Any] = {
        "finetune": {"ft": {"train": "tr", "validation": "va", "test": "te", "precision": "half"}}
    }
    with pytest.raises(InputError, match=r"finetune\.ft\.precision: 'half' .*means fp16"):
        resolve_finetunes(RunConfig.parse(config), sets)


class _Scaler:
    """A stand-in for torch.amp.GradScaler that reports (or not) an overflow."""

    def __init__(self, overflow: bool) -> None:
        self.overflow, self.factor, self.stepped = overflow, 1024.0, 0

    def scale(self, t: torch.Tensor) -> torch.Tensor:
        return t * self.factor

    def unscale_(self, optimizer: torch.optim.Optimizer) -> None:
        for group in optimizer.param_groups:
            for p in group["params"]:
                p.grad = p.grad / self.factor

    def step(self, optimizer: torch.optim.Optimizer) -> None:
        if not self.overflow:
            optimizer.step()
            self.stepped += 1

    def update(self) -> None:
        if self.overflow:
            self.factor /= 2

    def get_scale(self) -> float:
        return self.factor


def _problem(scaler: Any = None, precision: str = "fp16") -> tuple[torch.nn.Linear, Optimisation]:
    torch.manual_seed(0)
    layer = torch.nn.Linear(4, 2)
    return layer, Optimisation(list(layer.parameters()), 0.1, 10, grad_clip=1.0, precision=precision, scaler=scaler)


@pytest.mark.parametrize("overflow", [True, False])
def test_an_overflowing_fp16_step_is_skipped_with_its_schedule_step(overflow: bool) -> None:
    layer, opt = _problem(_Scaler(overflow))
    before = [p.detach().clone() for p in layer.parameters()]
    opt.step(layer(torch.ones(3, 4)).sum())
    moved = any(not torch.equal(a, b) for a, b in zip(before, layer.parameters(), strict=True))
    assert moved is not overflow
    assert opt.skipped == int(overflow) and opt.scheduler.last_epoch == int(not overflow)


def test_torchs_own_scaler_on_the_cpu_skips_an_infinite_gradient() -> None:
    layer, opt = _problem(precision="fp16")
    assert isinstance(opt.scaler, torch.amp.GradScaler)
    before = [p.detach().clone() for p in layer.parameters()]
    opt.step(layer(torch.ones(3, 4)).sum() * float("inf"))
    assert all(torch.equal(a, b) for a, b in zip(before, layer.parameters(), strict=True)) and opt.skipped == 1
    opt.step(layer(torch.ones(3, 4)).sum())
    assert opt.skipped == 1 and opt.scheduler.last_epoch == 1
    assert "scaler" in opt.state_dict()  # checkpoints keep its scale
