"""The training rules, as the plan declares them (``workflow/rules/batching.smk``, ``train.smk``):
the batch plans and duplicate statistics, the training rows, the token files, the train jobs and
the release copies."""

from __future__ import annotations

from typing import TYPE_CHECKING

from clinsent import paths
from clinsent.plan.rules.base import Declarations, Declared, Folder, Wildcards

if TYPE_CHECKING:
    from clinsent.plan.layout import Plan

DECLARED = Declarations()
_rule = DECLARED.rule


@_rule(lambda p: [p.run.tree.pattern(paths.BATCH_PLAN)])
def batch_plan(p: Plan, wc: Wildcards) -> Declared:
    return dict(p.batch_plan_inputs(wc["plan"]))


@_rule(lambda p: [p.run.tree.pattern(paths.DUPLICATE_ENTITIES)])
def duplicate_stats(p: Plan, wc: Wildcards) -> Declared:
    return {"sets": p.run.tree.file(paths.ENTITY_SETS), "linked": p.run.tree.file(paths.LINKED)}


@_rule(
    lambda p: {
        "rows": p.run.tree.pattern(paths.TRAINING_ROWS),
        "report": p.run.tree.pattern(paths.TRAINING_ROWS_REPORT),
    }
)
def training_rows(p: Plan, wc: Wildcards) -> Declared:
    return p.files.training_data_files(wc["source"])


@_rule(lambda p: [p.run.tree.pattern(paths.TOKENS)])
def tokens(p: Plan, wc: Wildcards) -> Declared:
    return p.token_inputs(wc["token_source"], wc["tokenizer"])


@_rule(
    lambda p: {
        "model": Folder(p.run.tree.pattern(paths.MODEL)),
        "curve": p.run.tree.pattern(paths.CURVE),
        "selection": p.run.tree.pattern(paths.SELECTION),
    }
)
def train(p: Plan, wc: Wildcards) -> Declared:
    return p.train_inputs(wc["method"], wc["base_model"], wc["seed"])


@_rule(lambda p: [Folder(p.release_dir())])
def release(p: Plan, wc: Wildcards) -> Declared:
    runs = p.release_runs()
    return {
        "models": [r["model"] for r in runs],
        "records": [r["selection"] for r in runs] + [r["curve"] for r in runs],
        "metrics": list(dict.fromkeys(f for r in runs for f in [*r["metrics"].values(), *r["baseline"].values()])),
    }
