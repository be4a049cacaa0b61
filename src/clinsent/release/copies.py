"""The release copies of a run's trained models (the ``release`` rule): under
``<results>/release/<method>/<base model>/seed<k>/`` each model's files hard-linked (a copy where
links cannot be made) and its card (:mod:`clinsent.release.card`) rewritten with the zero-shot eval
metrics and their intervals beside the reference run's. The whole release folder is staged and
put in place by the atomic folder writer (:func:`clinsent.io.files.atomic_folder`), so a failed job
leaves the last release whole.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from clinsent.config.sections import ModelCard
from clinsent.io.files import atomic_folder
from clinsent.release import card as model_card


def _link(src: str, dst: str) -> None:
    """Hard-link a model file into the release copy (a copy across file systems)."""
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def release(
    model: str | Path,
    selection: str | Path,
    curve: str | Path,
    metrics: Mapping[str, str | Path],
    headlines: Mapping[str, str],
    base_model: str,
    card: ModelCard,
    out: str | Path,
    baseline: Mapping[str, str | Path] | None = None,
    reference: str | None = None,
) -> None:
    """A run's release copy in ``out`` (a new folder): the model folder's files hard-linked, its card
    rewritten with the eval metrics and their intervals (``metrics``: eval set -> metrics file;
    ``headlines``: eval set -> metric) beside the ``reference`` run's (``baseline``: its files)."""
    from clinsent.methods.base import METHODS

    info = json.loads(Path(selection).read_text())
    text = model_card.render(
        info,
        pd.read_csv(curve),
        METHODS.get(str(info["objective"])).reference,
        base_model,
        card,
        model_card.eval_rows(metrics, headlines, baseline),
        reference if baseline else None,
    )
    # not Snakemake's timestamp file: it touches the release copy's, which a link would share with the
    # model folder's, making the model (and everything downstream of it) look newer than its outputs
    shutil.copytree(model, out, copy_function=_link, ignore=shutil.ignore_patterns(".snakemake*"))
    model_card.write(out, text)


def release_all(runs: Sequence[Mapping[str, Any]], card: ModelCard, out: str | Path) -> None:
    """Every run's release copy (:func:`release`; ``runs``: the plan's ``release_runs``) under
    ``out``, staged beside it and put in place whole (no run: an empty folder)."""
    with atomic_folder(out) as staged:
        staged.mkdir()
        for run in runs:
            release(
                run["model"],
                run["selection"],
                run["curve"],
                run["metrics"],
                run["headlines"],
                run["base_model"],
                card,
                staged / str(run["folder"]),
                run.get("baseline"),
                run.get("reference"),
            )
