"""Figure: the curve sets' headline metric against training step per method (mean over
seeds), one panel per eval set the curves hold."""

from __future__ import annotations

from pathlib import Path

import pandas as pd


def curve_figure(curves: pd.DataFrame, out_paths: list[str | Path], title: str) -> None:
    """``curves``: columns method, base_model, seed, step, eval_set, metric, score."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    curves = curves[curves["eval_set"].notna() & (curves["eval_set"] != "")]  # loss-only rows (no curve set)
    eval_sets = list(dict.fromkeys(curves["eval_set"])) or ["(no curve)"]
    keys = list(dict.fromkeys(zip(curves["method"], curves["base_model"], strict=True)))
    colours = {key: plt.get_cmap("tab10")(i % 10) for i, key in enumerate(keys)}
    fig, axes = plt.subplots(1, len(eval_sets), figsize=(5.0 * len(eval_sets), 3.8), squeeze=False)
    for ax, name in zip(axes[0], eval_sets, strict=True):
        sub = curves[curves["eval_set"] == name]
        for (method, base), g in sub.groupby(["method", "base_model"], sort=False):
            mean = g.groupby("step")["score"].mean()
            if len(mean) == 1:
                ax.axhline(mean.iloc[0], linestyle="--", linewidth=1, color=colours[(method, base)],
                           label=f"{method} ({base}, untrained)")
            else:
                ax.plot(mean.index, mean.values, marker="o", markersize=3, color=colours[(method, base)],
                        label=f"{method} ({base})")
        metric = sub["metric"].iloc[0] if len(sub) else ""
        ax.set_title(f"{name} ({metric})" if metric else name)
        ax.set_xlabel("training step")
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("score (cosine)")
    axes[0][-1].legend(fontsize=8, loc="best")
    fig.suptitle(title)
    fig.tight_layout()
    for path in out_paths:
        fig.savefig(path, dpi=150 if str(path).endswith(".png") else None)
    plt.close(fig)
