"""Augmentation examples (the augmentation paper's Table 2): one sentence through each row's
method's positive view."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pandas as pd

from clinsent.config.declare import knob
from clinsent.report.kinds.base import TABLE_KINDS, ReportContext, TableKind

if TYPE_CHECKING:
    from clinsent.methods.base import Method
    from clinsent.report.kinds.base import PlanView


@dataclass(frozen=True)
class AugmentationRow:
    label: str = knob("", "the row label", required=True)
    method: str = knob("", "a key of methods", required=True)


@dataclass(frozen=True)
class AugmentationsKnobs:
    sentence: str = knob("", "the example sentence (never a note's)", required=True)
    seed: int = knob(0, "the augmentations' draw", minimum=0)
    rows: tuple[AugmentationRow, ...] = knob(
        (), "a row per method: its view of the sentence", required=True, minItems=1
    )


@TABLE_KINDS.register("augmentations", settings=AugmentationsKnobs)
class AugmentationsTable(TableKind):
    def names(self, key: str, entry: Mapping[str, Any]) -> list[tuple[str, str, str]]:
        return [(f"tables.{key}.rows[{i}].method", row["method"], "methods") for i, row in enumerate(entry["rows"])]

    def params(self, key: str, entry: Mapping[str, Any], plan: PlanView) -> dict[str, Any]:
        return {"methods": {row["method"]: plan.methods[row["method"]].train_params() for row in entry["rows"]}}

    def table(self, key: str, entry: Mapping[str, Any], ctx: ReportContext) -> pd.DataFrame:
        from clinsent.methods.config import method_from_params

        methods = {m: method_from_params(p) for m, p in ctx.params["methods"].items()}
        return augmentation_table(entry, methods)


def augmentation_table(table: Mapping[str, Any], methods: Mapping[str, Method]) -> pd.DataFrame:
    """``table.sentence`` through each row's method (``rows[*].method``; seed ``table.seed``)."""
    sentence, seed = str(table["sentence"]), int(table.get("seed", 0))
    rows = [{"method": "None", "text": sentence}]
    for row in table["rows"]:
        view = methods[row["method"]].example_view(sentence, seed)
        rows.append({"method": row["label"], "text": view if view is not None else f"{sentence} (same text)"})
    return pd.DataFrame(rows, columns=["method", "text"])
