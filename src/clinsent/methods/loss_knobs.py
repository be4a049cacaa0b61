"""How a method's settings reach its loss: the loss class takes its knobs as keyword-only
arguments of ``__init__`` (after sentence-transformers' losses), and the method passes each one
that is a settings field, by name. Why ``inspect``: a loss names its knobs once, in its
signature, and no table of names is kept beside it.
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any


def loss_knobs(settings: Any, loss_class: type) -> dict[str, Any]:
    """The settings values of the knobs ``loss_class`` takes: each keyword-only argument of its
    ``__init__`` (and of the loss classes it extends) that is a settings field, by name."""
    fields = {f.name for f in dataclasses.fields(settings)}
    return {name: getattr(settings, name) for name in loss_arguments(loss_class) if name in fields}


def loss_arguments(loss_class: type) -> dict[str, Any]:
    """Name -> default of each keyword-only argument of ``loss_class.__init__`` and of the
    ``__init__`` of each class it extends (a subclass passes its parent's on as ``**kwargs``)."""
    out: dict[str, Any] = {}
    for cls in loss_class.__mro__:
        init = vars(cls).get("__init__")
        if init is None:
            continue
        for p in inspect.signature(init).parameters.values():
            if p.kind is p.KEYWORD_ONLY:
                out.setdefault(p.name, p.default)
    return out
