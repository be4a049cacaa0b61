"""A training-curve column against the training step, a line per run, mean ± std over seeds: the
loss, one of its parts (``loss_<part>``) or a statistic its method logs at each eval step
(``stat_<name>``, e.g. MixCSE-IW's ``stat_zero_weight_share``, the share of in-batch negatives
its complementary model removes: the augmentation paper's instance weighting made visible).

A ``stat_`` column is checked against the statistics each cited run's method declares
(:meth:`clinsent.methods.base.Method.curve_statistics`) when the config is read; a loss part is
checked when the figure is built (a loss names its parts as it runs)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from clinsent.config.declare import knob
from clinsent.errors import InputError
from clinsent.report.kinds.base import FIGURE_KINDS, FigureKind, LabelledRun, ReportContext, item_runs

if TYPE_CHECKING:
    import pandas as pd

    from clinsent.report.kinds.base import PlanView

POINT_COLUMNS = ["label", "run", "step", "seeds", "mean", "std"]


@dataclass(frozen=True)
class CurveColumnKnobs:
    column: str = knob(
        "",
        "the curve column: loss, loss_<part> or stat_<name> (see each objective's logged statistics)",
        required=True,
        pattern="^(loss|loss_[A-Za-z0-9_]+|stat_[A-Za-z0-9_]+)$",
    )
    ylabel: str | None = knob(None, "the y axis label (default the column)")
    lines: tuple[LabelledRun, ...] = knob((), "a line per run (mean ± std over its seeds)", required=True, minItems=1)


@FIGURE_KINDS.register("curve_column", settings=CurveColumnKnobs)
class CurveColumnFigure(FigureKind):
    def runs(self, key: str, entry: Mapping[str, Any]) -> list[tuple[str, str]]:
        return item_runs("figures", key, entry, "lines")

    def check(self, key: str, entry: Mapping[str, Any], plan: PlanView) -> None:
        from clinsent.run_ref import split_run

        column = str(entry["column"])
        for i, line in enumerate(entry["lines"]):
            cited = plan.methods[split_run(line["run"], plan.default_base)[0]]
            where = f"config: figures.{key}.lines[{i}].run"
            if not cited.method.trains:
                raise InputError(
                    where, f"cites {cited.name!r}, which trains nothing (no training curve)", "cite a trained method"
                )
            logged = cited.method.curve_statistics()
            if column.startswith("stat_") and column.removeprefix("stat_") not in logged:
                raise InputError(
                    where,
                    f"method {cited.name!r} (objective {cited.objective}) logs no {column}; "
                    f"it logs {['stat_' + s for s in logged] or 'no statistic'}",
                    "cite a run whose objective logs it, or choose a column it logs",
                )

    def points(self, key: str, entry: Mapping[str, Any], ctx: ReportContext) -> pd.DataFrame:
        return curve_column_points(ctx.curves, entry, ctx.default_base, key)

    def draw(
        self, points: pd.DataFrame, key: str, entry: Mapping[str, Any], ctx: ReportContext, out_paths: list[Any]
    ) -> None:
        from clinsent.report.figures import pyplot, save_figure

        plt = pyplot()
        fig, ax = plt.subplots(figsize=(5.2, 3.6))
        for label, sub in points.groupby("label", sort=False):
            ax.plot(sub["step"], sub["mean"], marker="o", markersize=3, label=label)
            ax.fill_between(sub["step"], sub["mean"] - sub["std"], sub["mean"] + sub["std"], alpha=0.2)
        ax.set_xlabel("training step")
        ax.set_ylabel(entry.get("ylabel") or entry["column"])
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
        ax.set_title(entry["caption"], fontsize=8, wrap=True)
        save_figure(fig, out_paths)


def curve_column_points(curves: pd.DataFrame, entry: Mapping[str, Any], default_base: str, key: str) -> pd.DataFrame:
    """Per line and step, the mean and (n - 1) standard deviation over seeds of ``entry["column"]``
    (a curve holds a row per eval set at each step, each with the step's same loss and statistics:
    one value per seed and step is kept)."""
    import pandas as pd

    from clinsent.run_ref import split_run

    column = entry["column"]
    rows = []
    for i, line in enumerate(entry["lines"]):
        method, base = split_run(line["run"], default_base)
        sub = curves[(curves["method"] == method) & (curves["base_model"] == base)]
        if column not in sub.columns or sub[column].isna().all():
            logged = sorted(c for c in sub.columns if c.startswith(("loss", "stat_")) and sub[c].notna().any())
            raise InputError(
                f"config: figures.{key}.lines[{i}].run",
                f"the training curves of {line['run']} have no {column} values; they have {logged}",
                "choose one of those columns",
            )
        per_seed = sub.dropna(subset=[column]).drop_duplicates(["seed", "step"])
        for step, g in per_seed.groupby("step", sort=True):
            values = g[column].astype(float)
            rows.append(
                {
                    "label": line["label"],
                    "run": line["run"],
                    "step": int(step),
                    "seeds": len(values),
                    "mean": float(values.mean()),
                    "std": float(values.std(ddof=1)) if len(values) > 1 else 0.0,
                }
            )
    return pd.DataFrame(rows, columns=POINT_COLUMNS)
