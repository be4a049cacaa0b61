"""What a results table's rows are: the note under ``results.md`` that says what was run.

The table's own notes (:mod:`clinsent.report.captions`) say how to read its cells; this note says
what stands behind them, from the run's records, not from the config alone: each trained row's
method, steps and batch size (and, for a job over several processes, ``batch 512 over 4 processes
of 128``) and the sentences (or rows) its training drew, as "N of the M
distinct sentences in the training set" (the train job's ``selection.json``: ``training_data``,
:meth:`clinsent.data.plan.PlanData.summary`), and each eval set's size (its metric file's items)
and file name. Counts and names only: never a text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Trained:
    """One trained run's record, as the note needs it."""

    method: str
    base_model: str
    steps: int
    batch_size: int
    drawn: int | None  # distinct sentences (or rows) its training drew
    of: int | None  # distinct sentences (or rows) in its training set
    unit: str  # "distinct sentences", "rows", ...
    source: str  # notes, or the training data's key
    processes: int = 1  # the train job's processes (clinsent.train.processes): the batch split between them

    @classmethod
    def from_record(cls, method: str, base_model: str, info: Mapping[str, Any]) -> Trained:
        settings, data = info.get("settings", {}), info.get("training_data") or {}
        return cls(
            method,
            base_model,
            int(settings.get("steps") or info.get("selected_step") or 0),
            int(settings.get("batch_size") or 0),
            data.get("rows"),
            data.get("of_rows"),
            str(data.get("unit") or "rows"),
            str(data.get("source") or ""),
            int((info.get("processes") or {}).get("processes") or 1),
        )


def _count(n: int) -> str:
    return f"{n:,}"


def _span(values: Sequence[int]) -> str:
    low, high = min(values), max(values)
    return _count(low) if low == high else f"{_count(low)} to {_count(high)}"


def run_sentence(runs: Sequence[Trained]) -> str:
    """One method on one base model (each seed's record: ``runs``), as a clause."""
    first = runs[0]
    steps = _span([r.steps for r in runs])
    batch = _span([r.batch_size for r in runs])
    spread = _span([r.processes for r in runs])
    if max(r.processes for r in runs) > 1:  # the same batch, split: "batch 512 over 4 processes of 128"
        batch += f" over {spread} processes of {_span([r.batch_size // r.processes for r in runs])}"
    head = f"{first.method} on {first.base_model}: {steps} steps of batch {batch}"
    drawn = [r.drawn for r in runs if r.drawn is not None]
    of = [r.of for r in runs if r.of is not None]
    unit = first.unit
    where = f" ({first.source})" if first.source else ""
    if not drawn:
        return head
    if of:
        return f"{head}, drawing {_span(drawn)} of the {_span(of)} {unit} in its training set{where}"
    return f"{head}, on {_span(drawn)} {unit} of its training set{where}"


def eval_set_clause(name: str, size: tuple[int, str] | None, files: Sequence[str]) -> str:
    shown = f" ({', '.join(files)})" if files else ""
    return f"{name}: {_count(size[0])} {size[1]}{shown}" if size else f"{name}{shown}"


def note(
    trained: Sequence[Trained],
    untrained: Sequence[str],
    eval_sets: Mapping[str, Sequence[str]],
    sizes: Mapping[str, tuple[int, str]],
) -> str:
    """The note: what each trained row ran (seeds of a method and base model together), which rows
    are models as given, and each eval set's size and files (``eval_sets``: name -> file names)."""
    groups: dict[tuple[str, str], list[Trained]] = {}
    for run in trained:
        groups.setdefault((run.method, run.base_model), []).append(run)
    parts = []
    if groups:
        parts.append("What ran: " + "; ".join(run_sentence(g) for g in groups.values()) + ".")
    if untrained:
        parts.append(f"Untrained (the model as given): {', '.join(untrained)}.")
    if eval_sets:
        parts.append(
            "Eval sets: " + "; ".join(eval_set_clause(n, sizes.get(n), f) for n, f in eval_sets.items()) + "."
        )
    return " ".join(parts)
