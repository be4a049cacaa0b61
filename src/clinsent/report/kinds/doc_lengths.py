"""Document lengths (the healthcare-LM paper's Table 12 and Figure 7), read from the documents
stage's statistics (whitespace tokens): the table of the share of documents at
or above each minimum length beside the paper's, and the figure of the pre-training documents per length bin."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd

from clinsent.config.declare import knob
from clinsent.report.cells import MISSING
from clinsent.report.figures import pyplot, save_figure
from clinsent.report.kinds.base import (
    FIGURE_KINDS,
    PAPER_DOC,
    TABLE_KINDS,
    FigureKind,
    PaperCells,
    ReportContext,
    TableKind,
)

if TYPE_CHECKING:
    from clinsent.report.kinds.base import PlanView


def _stats(plan: PlanView) -> dict[str, Any]:
    return {"documents": plan.documents_stats_path()}


@dataclass(frozen=True)
class LengthRow:
    label: str = knob("", "a minimum length in words (16 … 2048)", required=True)
    paper: PaperCells | None = knob(None, PAPER_DOC)


@dataclass(frozen=True)
class DocLengthsTableKnobs:
    columns: tuple[str, ...] = knob(("",), "the paper's column heads", minItems=1)
    rows: tuple[LengthRow, ...] = knob((), "a row per minimum length", required=True, minItems=1)


@dataclass(frozen=True)
class DocLengthsFigureKnobs:
    partition: Literal["pretrain", "downstream"] | None = knob(None, "the documents shown (default pretrain)")


@TABLE_KINDS.register("doc_lengths", settings=DocLengthsTableKnobs)
class DocLengthsTable(TableKind):
    def inputs(self, key: str, entry: Mapping[str, Any], plan: PlanView) -> dict[str, Any]:
        return _stats(plan)

    def table(self, key: str, entry: Mapping[str, Any], ctx: ReportContext) -> pd.DataFrame:
        return length_table(entry, read_stats(ctx.inputs["documents"]), ctx.paper_label)


@FIGURE_KINDS.register("doc_lengths", settings=DocLengthsFigureKnobs)
class DocLengthsFigure(FigureKind):
    def inputs(self, key: str, entry: Mapping[str, Any], plan: PlanView) -> dict[str, Any]:
        return _stats(plan)

    def points(self, key: str, entry: Mapping[str, Any], ctx: ReportContext) -> pd.DataFrame:
        return length_points(read_stats(ctx.inputs["documents"]), entry)

    def draw(
        self, points: pd.DataFrame, key: str, entry: Mapping[str, Any], ctx: ReportContext, out_paths: list[Any]
    ) -> None:
        length_figure(points, read_stats(ctx.inputs["documents"]), entry, out_paths)


def read_stats(path: str) -> dict[str, Any]:
    return dict(json.loads(Path(path).read_text(encoding="utf-8")))


def length_points(stats: Mapping[str, Any], figure: Mapping[str, Any]) -> pd.DataFrame:
    """Documents per length bin (whitespace tokens) of the figure's partition."""
    part = stats[figure.get("partition", "pretrain")]
    edges, counts = part["histogram"]["edges"], part["histogram"]["counts"]
    his = [*edges[1:], None]
    return pd.DataFrame(
        {
            "from": edges,
            "below": his,
            "documents": counts,
            "share": np.asarray(counts, dtype=float) / max(sum(counts), 1),
        }
    )


def length_figure(
    points: pd.DataFrame, stats: Mapping[str, Any], figure: Mapping[str, Any], out_paths: list[Any]
) -> None:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5.2, 3.4))
    names = [f"{int(a)}+" if pd.isna(b) else f"{int(a)}-{int(b) - 1}" for a, b in zip(points["from"], points["below"])]
    ax.bar(range(len(points)), points["documents"])
    ax.set_xticks(range(len(points)), names, rotation=45, ha="right", fontsize=7)
    ax.set_xlabel("tokens per document (whitespace)")
    ax.set_ylabel("documents")
    median = stats[figure.get("partition", "pretrain")]["quantiles"].get("0.5")
    ax.set_title(
        f"{figure['caption']} (median {median:.0f})" if median is not None else figure["caption"],
        fontsize=8,
        wrap=True,
    )
    save_figure(fig, out_paths)


def length_table(table: Mapping[str, Any], stats: Mapping[str, Any], paper_label: str) -> pd.DataFrame:
    """Table 12: per minimum length (a row's label), the share of our pre-training documents at
    or above it, and the paper's columns (``columns``)."""
    shares = stats["pretrain"]["min_length_share"]
    counts = stats["pretrain"]["min_length_count"]
    heads = table.get("columns") or []
    rows = []
    for row in table["rows"]:
        key = str(row["label"])
        rec = {
            "min. document length": key,
            "ours: share": f"{shares[key]:.2f}" if key in shares else MISSING,
            "ours: documents": str(counts[key]) if key in counts else MISSING,
        }
        paper = (row.get("paper") or [[]])[0] or []
        for i, head in enumerate(heads):
            rec[f"{head} ({paper_label})"] = paper[i] if i < len(paper) and paper[i] is not None else MISSING
        rows.append(rec)
    return pd.DataFrame(rows)
