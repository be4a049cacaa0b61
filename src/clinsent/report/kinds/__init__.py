"""The table and figure kinds of the paper reports: one module per kind (see
:mod:`clinsent.report.kinds.base`). Importing this package registers the built-ins; a plugin
module listed under the config's ``plugins`` may register more."""

from __future__ import annotations

from clinsent.report.kinds import (
    alignment_uniformity,
    augmentations,
    bar,
    box,
    cited,
    confusion,  # noqa: E402,F401
    corpus_stats,
    curve_column,
    doc_lengths,
    eval_stats,
    fraction,
    heatmap,
    leaderboard,
    line,
    retrieval_examples,
    runs,
    tsne,
)
from clinsent.report.kinds.base import FIGURE_KINDS, TABLE_KINDS, FigureKind, ReportContext, TableKind

__all__ = ["FIGURE_KINDS", "TABLE_KINDS", "FigureKind", "ReportContext", "TableKind"]
