"""Figure: the curve sets' headline metric against training step per method (mean over
seeds) with its interval band, one panel per eval set the curves hold; and the two helpers every figure of the report
uses (matplotlib without a display, and the save to png/pdf)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd


def pyplot() -> Any:
    """matplotlib.pyplot on the Agg backend (jobs have no display)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig: Any, out_paths: list[Any]) -> None:
    """Lay the figure out, write it to each path (png at 150 dpi; pdf as vectors) and close it."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    for path in out_paths:  # the tight box: a long title or label widens the image instead of being clipped
        fig.savefig(path, dpi=150 if str(path).endswith(".png") else None, bbox_inches="tight", pad_inches=0.1)
    plt.close(fig)


def curve_figure(curves: pd.DataFrame, out_paths: list[str | Path], title: str) -> None:
    """``curves``: columns method, base_model, seed, step, eval_set, metric, score, and optionally
    score_low/score_high (each point's 95% bootstrap interval over the set's items: drawn as a
    band, its bounds averaged over seeds) and selected_step (the step each run's saved model is
    from, where a step was selected: marked with a star; NaN, no selection, no star). One legend
    entry per run; the y-axis spans the bands, so a change inside an interval does not look steep."""
    plt = pyplot()

    curves = curves[curves["eval_set"].notna() & (curves["eval_set"] != "")]  # loss-only rows (no curve set)
    eval_sets = list(dict.fromkeys(curves["eval_set"]))
    if not eval_sets:  # the plan declares no curve figure then (Plan.has_curves): nothing to draw
        raise ValueError("no curve set in the training curves: nothing to draw")
    keys = list(dict.fromkeys(zip(curves["method"], curves["base_model"], strict=True)))
    colours = {key: plt.get_cmap("tab10")(i % 10) for i, key in enumerate(keys)}
    fig, axes = plt.subplots(1, len(eval_sets), figsize=(5.0 * len(eval_sets), 3.8), squeeze=False)
    marked = False  # one legend entry for the selected-step markers
    banded = {"score_low", "score_high"} <= set(curves.columns)
    for ax, name in zip(axes[0], eval_sets, strict=True):
        sub = curves[curves["eval_set"] == name]
        for (method, base), g in sub.groupby(["method", "base_model"], sort=False):
            colour, label = colours[(method, base)], f"{method} ({base})"
            per_step = g.groupby("step")
            mean = per_step["score"].mean()
            low = per_step["score_low"].mean() if banded else None
            high = per_step["score_high"].mean() if banded else None
            if len(mean) == 1:  # an untrained run: one point, a level line across the panel
                ax.axhline(mean.iloc[0], linestyle="--", linewidth=1, color=colour, label=label)
                if low is not None and high is not None and np.isfinite([low.iloc[0], high.iloc[0]]).all():
                    ax.axhspan(low.iloc[0], high.iloc[0], color=colour, alpha=0.12, linewidth=0)
                continue
            ax.plot(mean.index, mean.values, marker="o", markersize=3, color=colour, label=label)
            if low is not None and high is not None and np.isfinite(low.to_numpy()).any():
                ax.fill_between(mean.index, low.to_numpy(), high.to_numpy(), color=colour, alpha=0.15, linewidth=0)
            chosen = [
                st for st in pd.unique(g.get("selected_step", pd.Series(dtype=float)).dropna()) if st in mean.index
            ]
            if chosen:  # the step(s) whose model was saved and evaluated (one per seed)
                ax.plot(
                    chosen,
                    mean.loc[chosen].to_numpy(),
                    linestyle="none",
                    marker="*",
                    markersize=12,
                    markeredgecolor="black",
                    color=colour,
                    label="selected step" if not marked else None,
                )
                marked = True
        metric = sub["metric"].iloc[0] if len(sub) else ""
        ax.set_title(f"{name} ({metric})" if metric else name)
        ax.set_xlabel("training step")
        ax.set_ylabel(metric or "score")  # the eval set's headline metric (Spearman, accuracy, MRR ...)
        ax.grid(alpha=0.3)
    if axes[0][-1].get_legend_handles_labels()[0]:
        axes[0][-1].legend(fontsize=8, loc="best")
    fig.suptitle(title)
    save_figure(fig, out_paths)
