"""The method registry: one module per objective (see :mod:`clinsent.methods.base`).

``METHODS.get(objective)`` returns a method's class, importing its module (named as the
objective) and no other; the built-ins load no torch (their losses are imported by
``build_loss``). Add one by writing a module that subclasses ``Method`` and registers it, here
or in a plugin listed under the config's ``plugins``.
"""

from __future__ import annotations

from clinsent.methods.base import METHODS, Method
from clinsent.methods.knobs import MethodSettings, TrainedSettings

__all__ = ["METHODS", "Method", "MethodSettings", "TrainedSettings"]
