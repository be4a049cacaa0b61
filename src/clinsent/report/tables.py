"""The results table in the layout of MED-SE's Table 3: one row per method (within each base
model), one column per eval set, its task's headline metric (STS: Spearman; RQE: accuracy)
as mean ± std over seeds (sample std, ddof=1; a single seed shows its value and, where the task
has one, its 95% bootstrap interval over the eval set's items in brackets), and beside each eval
set the paired difference to the reference run (:mod:`clinsent.report.paired`): ``Δ`` with its
95% paired-bootstrap interval, marked ``*`` where the interval excludes 0, ``untested`` where it
cannot be computed."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from clinsent.report.paired import Paired

EXCLUDES_ZERO = "*"  # a paired interval that excludes 0
UNTESTED = "untested"


def fmt_mean_std(values: np.ndarray, decimals: int = 3, style: str = "f") -> str:
    """``mean ± std`` (sample std) to ``decimals`` decimals (``style`` e: scientific); one value alone."""
    if len(values) == 1:
        return f"{values[0]:.{decimals}{style}}"
    return f"{values.mean():.{decimals}{style}} ± {values.std(ddof=1):.{decimals}{style}}"


def _interval(rows: pd.DataFrame, decimals: int = 3) -> str:
    """`` [low, high]``: the 95% bootstrap interval over the eval set's items, shown with a single
    seed (several seeds show their mean ± std; each seed's interval is in summary.csv); `` (untested)``
    where the metric has none."""
    if len(rows) != 1 or "ci_low" not in rows:
        return ""
    if rows["ci_low"].isna().all():  # a metric without item replicates (geometry, fitted values)
        return f" ({UNTESTED})"
    low, high = float(rows["ci_low"].iloc[0]), float(rows["ci_high"].iloc[0])
    return f" [{low:.{decimals}f}, {high:.{decimals}f}]"


def _headline_rows(summary: pd.DataFrame, eval_sets: Mapping[str, str]) -> pd.DataFrame:
    """The summary's rows of each eval set's headline metric (``eval_sets``: name -> headline)."""
    return summary[[m == eval_sets.get(e) for e, m in zip(summary["eval_set"], summary["metric"], strict=True)]]


def results_cells(
    summary: pd.DataFrame, eval_sets: Mapping[str, str]
) -> tuple[dict[str, dict[str, np.ndarray]], dict[str, str]]:
    """The results table's values over seeds, eval set -> ``method@base_model`` -> values, and
    each column's metric: what :func:`clinsent.report.spread.check` judges."""
    df = _headline_rows(summary, eval_sets)
    cells = {
        name: {
            f"{m}@{b}": g.sort_values("seed")["value"].to_numpy()
            for (m, b), g in df[df["eval_set"] == name].groupby(["method", "base_model"], sort=False)
        }
        for name in eval_sets
    }
    return cells, dict(eval_sets)


def signed(x: float, decimals: int = 3) -> str:
    """A difference with its sign (a minus sign, not a hyphen)."""
    return f"{x:+.{decimals}f}".replace("-", "−")


def diff_cell(diff: float, interval: tuple[float, float] | None, decimals: int = 3) -> str:
    """``+0.017 [−0.006, +0.043]``, ``*`` after it where the interval excludes 0; ``untested``
    in place of the interval where there is none."""
    if interval is None or not all(np.isfinite(interval)):
        return f"{signed(diff, decimals)} ({UNTESTED})"
    low, high = interval
    mark = f" {EXCLUDES_ZERO}" if low > 0 or high < 0 else ""
    return f"{signed(diff, decimals)} [{signed(low, decimals)}, {signed(high, decimals)}]{mark}"


def diff_head(head: str, reference: str) -> str:
    return f"{head} Δ vs {reference}"


def results_table(
    summary: pd.DataFrame,
    eval_sets: dict[str, str],
    methods: list[str],
    paired: Paired | None = None,
    reference: str | None = None,
) -> pd.DataFrame:
    """Rows (base_model, method) in config order, a column per eval set (``eval_sets``: name ->
    headline metric, shown in the column header when it is not Spearman), plus seed counts; with
    a ``reference`` method, beside each eval set its paired difference to the reference run on
    the same base model (means over seeds, the interval from ``paired``)."""
    df = _headline_rows(summary, eval_sets)
    heads = {name: name if metric == "spearman" else f"{name} ({metric})" for name, metric in eval_sets.items()}
    compare = reference is not None and reference in set(df["method"])
    columns = []
    for name in eval_sets:
        columns += [heads[name], *([diff_head(heads[name], str(reference))] if compare else [])]
    rows = []
    for base in list(dict.fromkeys(df["base_model"])):
        ref = df[(df["base_model"] == base) & (df["method"] == reference)]
        for method in methods:
            sub = df[(df["base_model"] == base) & (df["method"] == method)]
            if sub.empty:
                continue
            row: dict[str, object] = {"base_model": base, "method": method, "seeds": int(sub["seed"].nunique())}
            for name in eval_sets:
                one = sub[sub["eval_set"] == name]
                vals = one["value"].to_numpy()
                row[heads[name]] = (fmt_mean_std(vals) if len(vals) else "–") + _interval(one)
                if not compare:
                    continue
                ref_vals = ref[ref["eval_set"] == name]["value"].to_numpy()
                if method == reference or not len(vals) or not len(ref_vals):
                    row[diff_head(heads[name], str(reference))] = "–"
                    continue
                interval = (
                    paired.interval((method, base), (str(reference), base), name, eval_sets[name])
                    if paired is not None
                    else None
                )
                row[diff_head(heads[name], str(reference))] = diff_cell(float(vals.mean() - ref_vals.mean()), interval)
            rows.append(row)
    return pd.DataFrame(rows, columns=["base_model", "method", "seeds", *columns])


def _cells(table: pd.DataFrame, bold: Any, escape: Any = str) -> list[list[str]]:
    """Each row's cells as text (``escape``d), ``bold(text)`` around those in ``table.attrs['bold']``
    ((row, column) pairs: a leaderboard's best of each column)."""
    marked = {(int(i), str(c)) for i, c in table.attrs.get("bold", [])}
    return [
        [
            bold(escape(str(v))) if (i, str(c)) in marked else escape(str(v))
            for c, v in zip(table.columns, row, strict=True)
        ]
        for i, row in enumerate(table.itertuples(index=False))
    ]


def to_markdown(table: pd.DataFrame, caption: str) -> str:
    cols = list(table.columns)
    lines = [f"**{caption}**", "", "| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in _cells(table, lambda t: f"**{t}**")]
    return "\n".join(lines) + "\n"


def _tex_escape(text: str) -> str:
    for a, b in [("\\", r"\textbackslash{}"), ("_", r"\_"), ("%", r"\%"), ("&", r"\&"), ("#", r"\#")]:
        text = text.replace(a, b)
    return text.replace("±", r"$\pm$").replace("Δ", r"$\Delta$").replace("−", "$-$")


def to_latex(table: pd.DataFrame, caption: str) -> str:
    cols = list(table.columns)
    lines = [
        r"\begin{table}[t]",
        r"\centering",
        r"\begin{tabular}{ll" + "c" * (len(cols) - 2) + "}",
        r"\toprule",
        " & ".join(_tex_escape(c) for c in cols) + r" \\",
        r"\midrule",
    ]
    lines += [" & ".join(row) + r" \\" for row in _cells(table, lambda t: rf"\textbf{{{t}}}", _tex_escape)]
    lines += [r"\bottomrule", r"\end{tabular}", rf"\caption{{{_tex_escape(caption)}}}", r"\end{table}"]
    return "\n".join(lines) + "\n"
