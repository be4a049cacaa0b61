"""A loss reads like a sentence-transformers loss: its class takes its knobs as keyword arguments
of ``__init__`` (with the paper's defaults) and the method builds it from its settings
(:meth:`clinsent.methods.base.Method.loss_knobs`)."""

from __future__ import annotations

import dataclasses
import inspect
from pathlib import Path

import pytest

from clinsent.methods.base import METHODS
from clinsent.methods.knobs import TrainedSettings
from clinsent.methods.loss_knobs import loss_arguments

from testkit.losses import method_and_encoder

TRAINED = [name for name in METHODS.names() if issubclass(METHODS.get(name).settings_class, TrainedSettings)]


@pytest.mark.parametrize("objective", TRAINED)
def test_every_loss_takes_its_knobs_in_init_with_the_settings_defaults(tiny_bert: Path, objective: str) -> None:
    method, encoder = method_and_encoder(tiny_bert, objective)
    loss = method.build_loss(encoder)
    knobs = loss_arguments(type(loss))
    assert knobs, f"{type(loss).__name__} takes no knobs"
    fields = {f.name: f for f in dataclasses.fields(method.settings_class)}
    assert set(knobs) <= set(fields), f"{type(loss).__name__}: no settings field for {set(knobs) - set(fields)}"
    for name, default in knobs.items():
        assert default is not inspect.Parameter.empty, f"{type(loss).__name__}({name}=...) has no default"
        setting = fields[name].default
        assert tuple(default) == tuple(setting) if isinstance(default, tuple) else default == setting, (
            f"{type(loss).__name__}({name}={default!r}) but {method.settings_class.__name__}.{name} = {setting!r}"
        )
    doc = inspect.getdoc(type(loss)) or ""
    assert "Knobs" in doc and "Example" in doc, f"{type(loss).__name__}'s docstring lacks its knobs or an example"


def test_a_changed_knob_reaches_the_loss(tiny_bert: Path) -> None:
    method, encoder = method_and_encoder(tiny_bert, "medse", **{"lambda": 0.5, "temperature": 0.07})
    loss = method.build_loss(encoder)
    assert (loss.lam, loss.temperature) == (0.5, 0.07)
    method, encoder = method_and_encoder(tiny_bert, "declutr", num_positives=3)
    assert method.build_loss(encoder).num_positives == 3
