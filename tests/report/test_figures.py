"""What every report figure shares: nothing clipped at the image's edge (titles included), axis
labels from the metric, and no figure drawn without anything on it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import clinsent.report.figures as figures
from clinsent.report.figures import curve_figure
from clinsent.report.kinds.heatmap import heatmap_figure


def _captured(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every figure the report's save_figure writes (saved as usual)."""
    drawn: list[Any] = []
    save = figures.save_figure

    def keep(fig: Any, paths: list[Any]) -> None:
        drawn.append(fig)
        save(fig, paths)

    import sys

    for module in [figures, *(m for n, m in sys.modules.items() if n.startswith("clinsent.report.kinds."))]:
        if getattr(module, "save_figure", None) is save:  # the kinds import it by name
            monkeypatch.setattr(module, "save_figure", keep)
    return drawn


def _holds_every_artist(fig: Any, png: Path) -> bool:
    """The saved image is at least as large as the tight box around every artist of the figure
    (titles, labels, legends): nothing was cut off at its edge."""
    import matplotlib.image
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    box = fig.get_tightbbox(FigureCanvasAgg(fig).get_renderer())  # inches, as laid out when saved
    height, width = matplotlib.image.imread(png).shape[:2]
    return bool(width >= box.width * 150 - 1 and height >= box.height * 150 - 1)


def test_a_long_heatmap_title_is_not_clipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One task, three models: the title wraps to more lines than the figure has room for above the
    grid (it was cut at the top)."""
    drawn = _captured(monkeypatch)
    models = ["MiniLM-L6 (as is)", "tiny random BERT", "MiniLM + SimCSE (demo)"]
    points = pd.DataFrame({"model": models, "order": [0, 1, 2], "task": "biosses", "score": [0.3, 0.55, 0.8]})
    heatmap_figure(
        points,
        "Clinical embedding benchmark at demo scale (DEMO DATA): scores, models by mean rank.",
        [tmp_path / "h.png"],
    )
    assert _holds_every_artist(drawn[0], tmp_path / "h.png")


def test_curve_axes_say_the_metric_and_an_empty_curve_is_not_drawn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    curves = pd.DataFrame(
        {
            "method": "m",
            "base_model": "b",
            "seed": 0,
            "step": [0, 1, 2, 0, 1, 2],
            "eval_set": ["sts"] * 3 + ["rqe"] * 3,
            "metric": ["spearman"] * 3 + ["accuracy"] * 3,
            "score": [0.1, 0.2, 0.3, 0.5, 0.6, 0.7],
            "selected_step": 2,
        }
    )
    drawn = _captured(monkeypatch)
    curve_figure(curves, [tmp_path / "c.png"], "A title long enough to run past the panels of a two-panel figure " * 2)
    assert [ax.get_ylabel() for ax in drawn[0].axes] == ["spearman", "accuracy"]
    assert _holds_every_artist(drawn[0], tmp_path / "c.png")
    loss_only = curves.assign(eval_set="", metric="")
    with pytest.raises(ValueError, match="nothing to draw"):
        curve_figure(loss_only, [tmp_path / "empty.png"], "t")
    assert not (tmp_path / "empty.png").exists()
