"""The table and figure kinds of the paper reports: one module per kind, named as the kind (see
:mod:`clinsent.report.kinds.base`). ``TABLE_KINDS.get(name)`` imports that kind's module and no
other; a plugin module listed under the config's ``plugins`` may register more."""

from __future__ import annotations

from clinsent.report.kinds.base import FIGURE_KINDS, TABLE_KINDS, FigureKind, ReportContext, TableKind

__all__ = ["FIGURE_KINDS", "TABLE_KINDS", "FigureKind", "ReportContext", "TableKind"]
