"""What the benchmark's MTEB results job of each model needs from the plan: the run the
leaderboard cites for it, its seeds, and per task the headline, split, languages, files and the
metrics files its evaluation time is read from (:mod:`clinsent.benchmark.mteb`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from clinsent.benchmark.models import model_runs
from clinsent.models.base import from_hub
from clinsent.paths import MODEL, seed_folder
from clinsent.run_ref import split_run

if TYPE_CHECKING:
    from clinsent.plan.layout import Plan


def benchmark_models(plan: Plan) -> dict[str, dict[str, Any]]:
    """Model key -> run (method, base model), MTEB name, seeds and revisions (``seed<s>`` for a
    run this config trains; MTEB's ``no_revision_available`` for a model scored as it is) and
    ``selected_on``: the eval set a trained run's saved step was chosen on (None: untrained, or
    its last step), whose score is then optimistically biased; its results say so."""
    from clinsent.benchmark.mteb import NO_REVISION

    out = {}
    for key, model in model_runs(plan.run.config.models or {}).items():
        method, base = split_run(model["row"]["run"], plan.run.grid.default_base)
        as_is = "path" in model
        name = model["path"] if as_is and from_hub(model["path"]) else key
        seeds = plan.run.grid.seeds_of[method]
        entry = plan.run.methods[method]
        out[key] = {
            "run": [method, base],
            "name": name,
            "seeds": seeds,
            "revisions": {s: NO_REVISION if as_is else seed_folder(s) for s in seeds},
            "selected_on": entry.selection_set if entry.method.trains else None,
        }
    return out


def benchmark_tasks(plan: Plan) -> dict[str, dict[str, Any]]:
    """Task (eval set or fine-tune entry) -> metric, split, languages and files."""
    board = plan.run.tables.get("leaderboard") or {}
    scored = plan.scored_tasks()
    out = {}
    for task in board.get("eval_sets") or []:
        test = plan.run.finetune[task].settings.test if task in plan.run.finetune else task
        settings = plan.run.eval_sets[test].task.settings
        # the split scored: an STS table's `split`, or "all" when it scores every pair of the file; a task
        # without splits scores its file, which the config names as the test file (e.g. RQE's `path`)
        split = getattr(settings, "split", "test") or "all"
        out[task] = {
            "metric": scored[task].headline,
            "split": split,
            "languages": ["en"],
            "files": plan.files.eval_set_files(test),
            "task": scored[task].name,  # the task (sts, rqe, ...): the card's task type
        }
    return out


def model_cards(plan: Plan, model: Mapping[str, Any]) -> list[str]:
    """The card (README.md) of each seed's saved model of the model's run (``model``: one of
    :func:`benchmark_models`)."""
    method, base = model["run"]
    return [f"{plan.files.run_file(MODEL, method, base, s)}/README.md" for s in model["seeds"]]


def metrics_files(plan: Plan, model: Mapping[str, Any], tasks: Iterable[str]) -> dict[str, list[str]]:
    """Task -> the metrics file of each seed of the model's run (zero-shot or fine-tuned)."""
    method, base = model["run"]
    return {
        task: [
            (plan.files.finetune_metrics if task in plan.run.finetune else plan.files.metrics)(method, base, s, task)
            for s in model["seeds"]
        ]
        for task in tasks
    }
