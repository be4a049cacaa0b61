"""The method registry: one module per objective (see :mod:`clinsent.methods.base`).

Importing this package registers the built-in methods; ``METHODS.get(objective)`` returns a
method's class. Add one by writing a module that subclasses ``Method`` and registers it, here
or in a plugin listed under the config's ``plugins``.
"""

from __future__ import annotations

from clinsent.methods.base import METHODS, Method, MethodLoss, MethodSettings, TrainedSettings

from clinsent.methods import ct, declutr, medse, mixcse, mlm, mnr, none, note_category, simcse, sup_simcse  # noqa: E402,F401  (register the built-ins)

__all__ = ["METHODS", "Method", "MethodLoss", "MethodSettings", "TrainedSettings"]
