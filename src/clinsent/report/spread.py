"""Can a results table tell its rows apart? The check behind every report's spread lines.

A table whose metric sits at its ceiling (or floor) in every row, or whose rows all lie within
the seeds' spread of one another, says nothing: a broken condition would look exactly like a
working one. For each table, per column (an eval set's metric, per column group), with each
row's per-seed values:

- **at a bound**: every row's mean is within ``TOLERANCE`` of the metric's ceiling, or every
  row's mean within it of the floor (bounded metrics only: correlations, whose floor is no
  correlation, and shares in [0, 1] such as accuracy, F1, MRR and recall@k; p-values and
  unbounded metrics are not judged);
- **told apart**: the table has two rows whose means differ by more than both rows' standard
  deviation over seeds and by more than ``RESOLUTION`` (what three decimals show), and, where
  both rows have bootstrap replicates on the eval set's items, a paired bootstrap of their
  means over seeds tells them apart too (:mod:`clinsent.report.paired`; with one seed there is
  no spread, so the items alone decide); without replicates the gap alone counts.

The report jobs log one line per table (``spread: tables.<id>: ...``): the rows told apart by
the widest gap, or what is wrong; the same finding is the last note under the table
(:meth:`Spread.sentence`). Only config labels, column names and numbers are written,
never a data row. The paper demos' tests require every main table to pass.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from clinsent.run_ref import split_run

if TYPE_CHECKING:
    from clinsent.report.paired import Paired

TOLERANCE = 0.02  # of the metric's range: a mean this close to a bound is at it
RESOLUTION = 0.0005  # half the last of three decimals
_CORRELATION = re.compile(r"(spearman|pearson|kendall)$")
_SHARE = re.compile(r"(accuracy|f1|precision|recall|mrr|map|ndcg|roc_auc)")

# column -> row label -> the row's values over seeds
Cells = Mapping[str, Mapping[str, np.ndarray]]
# (column, row a, row b) -> whether a paired bootstrap tells the two rows apart (None: no replicates)
PairedTest = Callable[[str, str, str], "bool | None"]


def bounds(metric: str) -> tuple[float, float] | None:
    """(floor, ceiling) of a metric, judged on its absolute value for a correlation; None when
    the metric is not bounded or is a p-value."""
    if metric.endswith("_p"):
        return None
    if _CORRELATION.search(metric) or _SHARE.search(metric):
        return 0.0, 1.0
    return None


@dataclass(frozen=True)
class Spread:
    """What the check found in one table: ``problems`` (empty when it passes) and the widest gap
    between two rows, as (column, row a, row b, gap, the larger std of the two)."""

    problems: list[str]
    widest: tuple[str, str, str, float, float] | None
    seeds: int = 2  # the most seeds a row of the table has (one: there is no seed spread)

    @property
    def ok(self) -> bool:
        return not self.problems

    def line(self, where: str) -> str:
        if self.widest is None:
            gap = "no two rows to compare"
        else:
            column, a, b, diff, sd = self.widest
            spread = f"seed std {sd:.4f}" if self.seeds > 1 else "one seed: no seed spread"
            gap = f"widest gap {diff:.4f} ({spread}) in {column!r}: {a!r} vs {b!r}"
        if self.ok:
            return f"spread: {where}: rows told apart; {gap}"
        return f"spread: {where}: {'; '.join(self.problems)}; {gap}"

    def sentence(self) -> str:
        """The check's finding as the table's last note (under the table it speaks about)."""
        if self.widest is None:
            return "Spread: no two rows to compare."
        column, a, b, diff, sd = self.widest
        spread = f"seed std {sd:.3f}" if self.seeds > 1 else "one seed, so no seed spread"
        gap = f"the widest gap is {diff:.3f}, in `{column}`, between {a} and {b} ({spread})"
        if self.ok:
            return f"Spread: the rows are told apart; {gap}."
        return f"Spread: {'; '.join(self.problems)}: these rows may differ by noise alone; {gap}."

    def log(self, logger: logging.Logger, where: str) -> None:
        """The line at INFO when the table passes, at WARNING when it does not."""
        logger.log(logging.INFO if self.ok else logging.WARNING, self.line(where))


def paired_rows(paired: Paired, metrics: Mapping[str, str]) -> PairedTest:
    """The paired test of two rows of a column whose rows are ``method@base_model`` and whose
    columns are eval sets (``metrics``: column -> the metric shown)."""

    def test(column: str, a: str, b: str) -> bool | None:
        run_a, run_b = split_run(a, ""), split_run(b, "")
        if not run_a[1] or not run_b[1] or column not in metrics:
            return None
        return paired.differ(run_a, run_b, column, metrics[column])

    return test


def check(cells: Cells, metrics: Mapping[str, str], paired: PairedTest | None = None) -> Spread:
    """``cells``: column -> row -> values over seeds (rows without values are left out);
    ``metrics``: column -> the metric it shows (its bounds); ``paired``: (column, row, row) ->
    whether a paired bootstrap tells the two rows apart (None: it cannot say), asked of every
    pair the seeds' spread tells apart (with one seed, of every visible gap)."""
    problems = []
    widest: tuple[str, str, str, float, float] | None = None
    separated = False
    n_rows = 0
    seeds = max((len(v) for rows in cells.values() for v in rows.values()), default=0)
    for column, rows in cells.items():
        stats = {
            r: (float(np.mean(v)), float(np.std(v, ddof=1)) if len(v) > 1 else 0.0) for r, v in rows.items() if len(v)
        }
        n_rows = max(n_rows, len(stats))
        bound = bounds(metrics.get(column, ""))
        if bound is not None and stats:
            floor, ceiling = bound
            span = ceiling - floor
            means = [abs(m) if _CORRELATION.search(metrics[column]) else m for m, _ in stats.values()]
            if all(m >= ceiling - TOLERANCE * span for m in means):
                problems.append(f"{column!r} is at its ceiling ({ceiling:g}) in every row")
            elif all(m <= floor + TOLERANCE * span for m in means):
                problems.append(f"{column!r} is at its floor ({floor:g}) in every row")
        labels = list(stats)
        for i, a in enumerate(labels):
            for b in labels[i + 1 :]:
                diff = abs(stats[a][0] - stats[b][0])
                sd = max(stats[a][1], stats[b][1])
                if widest is None or diff - sd > widest[3] - widest[4]:
                    widest = (column, a, b, diff, sd)
                apart = diff > sd and diff > RESOLUTION
                if apart and paired is not None:  # the items too, where both rows have replicates
                    verdict = paired(column, a, b)
                    apart = apart if verdict is None else verdict
                separated |= apart
    if n_rows >= 2 and not separated:
        problems.append(
            "no two rows differ by more than the seeds' standard deviation"
            + (" and by a paired bootstrap on the items" if paired is not None else "")
        )
    return Spread(problems, widest, seeds)
