"""Sentence-corpus statistics (the augmentation paper's Table 1): a row per file of each corpus
and their total (:func:`clinsent.report.extras.corpus_stats_table`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from clinsent.report.kinds.base import TABLE_KINDS, ReportContext, TableKind
from clinsent.settings import knob

if TYPE_CHECKING:
    import pandas as pd

    from clinsent.plan import Plan


@dataclass(frozen=True)
class CorpusStatsKnobs:
    corpora: tuple[str, ...] = knob((), "keys of sentence_corpora", required=True, minItems=1)
    labels: dict[str, Any] | None = knob(None, "corpus -> a label per file")


@TABLE_KINDS.register("corpus_stats", settings=CorpusStatsKnobs)
class CorpusStatsTable(TableKind):
    note_sentences = True

    def names(self, key: str, entry: Mapping[str, Any]) -> list[tuple[str, str, str]]:
        return [(f"tables.{key}.corpora", name, "corpora") for name in entry["corpora"]]

    def inputs(self, key: str, entry: Mapping[str, Any], plan: Plan) -> dict[str, Any]:
        return {"stats": {c: plan.corpus_stats_path(c) for c in entry["corpora"]}}

    def table(self, key: str, entry: Mapping[str, Any], ctx: ReportContext) -> pd.DataFrame:
        from clinsent.report.extras import corpus_stats_table

        return corpus_stats_table(entry, ctx.inputs["stats"])
