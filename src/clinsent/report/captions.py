"""Captions and table notes that say what this run did, never what another run would have.

The report's captions (``workflow/report/*.rst``, rendered by ``snakemake --report``) and the
notes under ``results.md`` are built here from :class:`RunFacts`, the facts of one run the
plan knows at dry run (seeds, the reference row, which sets select a step, which corpus stages
ran, whether a paper's numbers stand beside ours, the evaluation length) and the run's own
records (the evaluation length each base model resolved to). Each ``.rst`` file prints the
report rule's ``captions`` param, so a caption is exactly as true as these functions, which
``tests/report/test_captions.py`` checks on runs of several shapes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from clinsent.evaluation.bootstrap import CONFIDENCE, CURVE_RESAMPLES, RESAMPLES


@dataclass(frozen=True)
class RunFacts:
    """What one run did, as the captions state it (every field from the config and the plan)."""

    seeds: int  # the most seeds of any method
    reference: str | None = None  # the method every row is compared with (clinsent.report.paired)
    selection: Mapping[str, str | None] = field(default_factory=dict)  # trained method -> its selection set
    reported: Sequence[str] = ()  # the eval sets the results table shows
    curve_sets: Sequence[str] = ()  # the sets the training curves hold
    corpus_stages: Sequence[str] = ()  # the notes' stages that ran, in order
    paper_tables: Mapping[str, bool] = field(default_factory=dict)  # table id -> whether it has the paper's numbers
    eval_length: int | str = "auto"  # evaluation.max_length as configured

    def params(self) -> dict[str, Any]:
        """As a rule's params (plain values)."""
        return {
            k: (dict(v) if isinstance(v, Mapping) else list(v) if isinstance(v, tuple) else v)
            for k, v in asdict(self).items()
        }

    @classmethod
    def from_params(cls, values: Mapping[str, Any]) -> RunFacts:
        given: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in values.items()}
        return cls(**given)

    @property
    def selected_sets(self) -> list[str]:
        """The sets some trained method selects its step on (in method order)."""
        return list(dict.fromkeys(s for s in self.selection.values() if s))

    @property
    def selected_on_reported(self) -> list[str]:
        """Sets a step is selected on that the results table also reports (optimistically biased)."""
        return [s for s in self.selected_sets if s in self.reported]


def values_sentence(facts: RunFacts) -> str:
    if facts.seeds > 1:
        return f"Each cell is the mean ± std (sample std) over {facts.seeds} seeds."
    return (
        f"One seed: each cell is its value and, in brackets, the {CONFIDENCE:.0%} bootstrap interval over the eval "
        f"set's items ({RESAMPLES} percentile resamples)."
    )


def reference_sentence(facts: RunFacts) -> str:
    if facts.reference is None:
        return "No reference row (no untrained method and no report.reference): no paired differences."
    return (
        f"Δ vs {facts.reference}: each row minus the {facts.reference} row on the same base model, with the "
        f"{CONFIDENCE:.0%} paired-bootstrap interval on the same resamples of the items; * where the interval "
        "excludes 0, untested where it cannot be computed. Δ is taken before rounding (as summary.csv's diff), "
        "so it can differ by 0.001 from the difference of the two cells as shown."
    )


def selection_sentence(facts: RunFacts) -> str:
    chosen = facts.selected_sets
    if not facts.selection:
        return "No method trains: every row is a model as given."
    if not chosen:
        return "No selection set: every trained model is its last step."
    unselected = [m for m, s in facts.selection.items() if not s]
    line = "The saved step of each trained model is the best on " + ", ".join(f"`{s}`" for s in chosen)
    line += f" (the last step for {', '.join(unselected)})." if unselected else "."
    biased = facts.selected_on_reported
    if biased:
        line += (
            " † " + ", ".join(f"`{s}`" for s in biased) + " both selects the step and is reported: its score is "
            "optimistically biased (select on a dev split to report an unbiased one)."
        )
    return line


def length_sentence(facts: RunFacts, lengths: Mapping[str, int] | None = None) -> str:
    from clinsent.evaluation.length import AUTO, describe

    if lengths:
        return describe(lengths, facts.eval_length)
    if facts.eval_length == AUTO:
        return "Texts are evaluated at up to each base model's own length (evaluation.max_length: auto)."
    return f"Texts are evaluated at up to {facts.eval_length} tokens (evaluation.max_length)."


def results_caption(facts: RunFacts, lengths: Mapping[str, int] | None = None) -> str:
    """The results table's caption (``snakemake --report``) and its notes in ``results.md``."""
    return " ".join(
        [
            "The headline metric of every eval set per method and base model.",
            values_sentence(facts),
            reference_sentence(facts),
            selection_sentence(facts),
            length_sentence(facts, lengths),
        ]
    )


def summary_caption(facts: RunFacts) -> str:
    ref = (
        f" Its columns reference, diff, diff_ci_low and diff_ci_high compare each row with the {facts.reference} "
        "row of the same base model, eval set and metric (paired bootstrap on the same resamples)."
        if facts.reference
        else " No reference row: the difference columns are empty."
    )
    return (
        "The tidy result of the run: one row per method, base model, seed, eval set and metric, with the "
        "training step the evaluated model is from and, where the task has items, the metric's "
        f"{CONFIDENCE:.0%} bootstrap interval." + ref
    )


def curves_caption(facts: RunFacts) -> str:
    sets = ", ".join(f"`{s}`" for s in facts.curve_sets) or "none"
    over = f"the mean over {facts.seeds} seeds" if facts.seeds > 1 else "one seed"
    band = f"the band is the {CONFIDENCE:.0%} bootstrap interval over the set's items ({CURVE_RESAMPLES} resamples" + (
        ", its bounds averaged over seeds)" if facts.seeds > 1 else ")"
    )
    chosen = facts.selected_sets
    mark = (
        "A star marks the step each run's saved model is from (selected on "
        + ", ".join(f"`{s}`" for s in chosen)
        + ")."
        if chosen
        else "No selection set: the saved models are the last step, and no step is marked."
    )
    return (
        f"Training curves of the curve sets ({sets}): their headline metric against training step, {over}; "
        f"{band}. {mark}"
    )


def corpus_caption(facts: RunFacts) -> str:
    if not facts.corpus_stages:
        return "No notes in this run: the corpus tables count the sentence corpora only."
    return (
        "Corpus statistics (counts only, no note text) of the stages that ran: " + ", ".join(facts.corpus_stages) + "."
    )


def paper_table_caption(facts: RunFacts, label: str) -> str:
    tables = facts.paper_tables
    beside = [t for t, has in tables.items() if has]
    alone = [t for t, has in tables.items() if not has]
    parts = [
        f"The tables of {label} regenerated from this run's summary.csv (the config says which cell is which run)."
    ]
    if beside:
        parts.append("Ours beside the paper's numbers: " + ", ".join(beside) + ".")
    if alone:
        parts.append("Ours only (the config gives no paper numbers): " + ", ".join(alone) + ".")
    parts.append(values_sentence(facts))
    return " ".join(parts)


# what only the run knows, written under the table in results.md (the report's captions are the plan's)
RESULTS_MD = (
    "The notes under the table in tables/results.md also say what ran, from the runs' records (each trained "
    "row's steps, batch size and the sentences its training drew; each eval set's size and file), and whether "
    "the rows can be told apart (the spread check)."
)


def captions(facts: RunFacts, paper_label: str = "paper") -> dict[str, str]:
    """Every caption of the report, by the name its ``.rst`` file prints."""
    return {
        "results": results_caption(facts) + " " + RESULTS_MD,
        "summary": summary_caption(facts),
        "curves": curves_caption(facts),
        "corpus": corpus_caption(facts),
        "paper_table": paper_table_caption(facts, paper_label),
    }


def has_paper_numbers(entry: Any) -> bool:
    """Whether a table entry of the config gives the paper's numbers anywhere (a ``paper`` key
    with a value, in the entry or in any of its rows)."""
    if isinstance(entry, Mapping):
        if entry.get("paper") not in (None, [], {}, ""):
            return True
        return any(has_paper_numbers(v) for v in entry.values())
    if isinstance(entry, list | tuple):
        return any(has_paper_numbers(v) for v in entry)
    return False
