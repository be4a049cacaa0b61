"""Sentence-corpus statistics (the augmentation paper's Table 1): a row per file of each corpus
and their total."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from clinsent.config.declare import knob
from clinsent.report.cells import MISSING
from clinsent.report.kinds.base import TABLE_KINDS, ReportContext, TableKind

if TYPE_CHECKING:
    from clinsent.report.kinds.base import PlanView


@dataclass(frozen=True)
class CorpusStatsKnobs:
    corpora: tuple[str, ...] = knob((), "keys of sentence_corpora", required=True, minItems=1)
    labels: dict[str, Any] | None = knob(None, "corpus -> a label per file")


@TABLE_KINDS.register("corpus_stats", settings=CorpusStatsKnobs)
class CorpusStatsTable(TableKind):
    note_sentences = True

    def names(self, key: str, entry: Mapping[str, Any]) -> list[tuple[str, str, str]]:
        return [(f"tables.{key}.corpora", name, "corpora") for name in entry["corpora"]]

    def inputs(self, key: str, entry: Mapping[str, Any], plan: PlanView) -> dict[str, Any]:
        return {"stats": {c: plan.corpus_stats_path(c) for c in entry["corpora"]}}

    def table(self, key: str, entry: Mapping[str, Any], ctx: ReportContext) -> pd.DataFrame:
        return corpus_stats_table(entry, ctx.inputs["stats"])


def corpus_stats_table(table: Mapping[str, Any], stats: Mapping[str, str]) -> pd.DataFrame:
    """A row per file of each corpus (labelled by the corpus' ``labels``) and, for several files, their total."""
    rows = []
    for name in table["corpora"]:
        report = json.loads(Path(stats[name]).read_text())
        labels = table.get("labels", {}).get(name) or [Path(f["path"]).name for f in report["files"]]
        per = list(zip(labels, report["per_file"], strict=False))
        if len(per) > 1:
            rows += [{"corpus": label, **_counts(s)} for label, s in per]
        rows.append({"corpus": name if len(per) > 1 else per[0][0], **_counts(report["stats"])})
    return pd.DataFrame(rows, columns=["corpus", "sentences", "words", "characters", "words/sentence"])


def _counts(s: Mapping[str, float]) -> dict[str, str]:
    mean = s.get("mean_words", float("nan"))
    return {
        "sentences": f"{int(s['sentences']):,}",
        "words": f"{int(s['words']):,}",
        "characters": f"{int(s['characters']):,}",
        "words/sentence": f"{mean:.1f}" if mean == mean else MISSING,
    }
