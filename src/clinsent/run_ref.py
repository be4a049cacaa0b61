"""A run reference as tables, figures and the benchmark write it: ``method`` (the config's default
base model) or ``method@base_model``. Imports nothing of the package, so the report's kinds and
the job grid (:mod:`clinsent.plan.experiments`) can both read one."""

from __future__ import annotations

Run = tuple[str, str]  # (method, base_model)


def split_run(ref: str, default_base: str) -> Run:
    """``method`` or ``method@base_model`` -> (method, base model)."""
    method, _, base = ref.partition("@")
    return method, base or default_base
