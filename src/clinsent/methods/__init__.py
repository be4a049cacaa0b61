"""The method registry: one module per objective (see :mod:`clinsent.methods.base`).

Importing this package registers the built-in methods (without torch: their losses are
imported by ``build_loss``); ``METHODS.get(objective)`` returns a
method's class. Add one by writing a module that subclasses ``Method`` and registers it, here
or in a plugin listed under the config's ``plugins``.
"""

from __future__ import annotations

from typing import Any

from clinsent.methods import ct, declutr, medse, mixcse, mlm, mnr, none, note_category, simcse, sup_simcse  # noqa: E402,F401  (register the built-ins)
from clinsent.methods.base import METHODS, Method, MethodSettings, TrainedSettings

__all__ = ["METHODS", "Method", "MethodSettings", "TrainedSettings"]


def __getattr__(name: str) -> Any:
    """``MethodLoss`` (:mod:`clinsent.losses.base`) on demand: importing the registry loads no torch."""
    if name == "MethodLoss":
        from clinsent.losses.base import MethodLoss

        return MethodLoss
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
