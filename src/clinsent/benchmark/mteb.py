"""Results in the MTEB results format, so the benchmark's numbers load with the ``mteb``
package's own objects (``mteb.TaskResult.from_disk``) and sit beside MTEB results in one folder:
``<results>/mteb/<model name as path>/<revision>/<task name>.json`` plus ``model_meta.json``.

Task names carry the prefix ``ClinSent.`` (file ``ClinSent.<eval set>.json``, ``task_name`` and
the card's dataset names alike), and each card says so: these are this project's clinical tasks
on the user's copies of the data, not MTEB's registered tasks of the same names (our BIOSSES is
BLURB's 20-pair test split, MTEB's has 100 pairs), and not results for MTEB's leaderboard, which
takes results for its own tasks through pull requests to its results repository.

One file per model and task holds, for the task's reported split, one scores entry (subset
``default``): ``main_score`` (the task's headline metric), every numeric metric of our metrics
JSON, ``hf_subset`` and ``languages`` (ISO 639-3 with script, MTEB's form). A trained run's seeds
are separate models to MTEB (each its own revision folder, ``seed<s>``); an as-is model has one.
``dataset_revision`` is a content hash of the task's files (MTEB's own tasks give a Hugging Face
dataset commit; ours are the user's local copies, so two results compare only when the hashes
agree). We write the format ourselves rather than through ``mteb``: it is a dev-only dependency
(its ``datasets`` and ``polars`` are not needed to run the workflow), and a test loads our files
with it.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

NO_REVISION = "no_revision_available"  # MTEB's value for a model without a known revision
TASK_PREFIX = "ClinSent."  # our tasks are not MTEB's registered tasks of the same names
NOTICE = (
    "The tasks named `ClinSent.<name>` are the clinical sentence-embedding pipeline's own evaluation sets, "
    "scored on local copies of their data (the dataset revision is a hash of those files). They are not MTEB's "
    "registered tasks of the same or similar names (MTEB's BIOSSES has 100 pairs; ours is BLURB's 20-pair test "
    "split) and these results are not submissions to MTEB's leaderboard."
)
FORMAT_VERSION = "2.26.24"  # the mteb release whose TaskResult our files are checked against
LANGUAGES = {"en": "eng-Latn", "zh": "cmn-Hans"}
# our task kinds -> the Hugging Face task id a model card's model-index names
HF_TASKS = {
    "sts": "sentence-similarity",
    "rqe": "text-classification",
    "probe": "text-classification",
    "retrieval": "sentence-similarity",
    "doc_classification": "text-classification",
    "token_classification": "token-classification",
}


def files_revision(paths: Iterable[str | Path]) -> str:
    """A short sha256 over the files' bytes (in the given order): the dataset revision."""
    digest = hashlib.sha256()
    for path in paths:
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                digest.update(chunk)
    return digest.hexdigest()[:16]


def task_result(
    task_name: str,
    split: str,
    metrics: Mapping[str, Any],
    main_metric: str,
    evaluation_seconds: float | None,
    dataset_revision: str,
    languages: list[str],
    date: float | None = None,
) -> dict[str, Any]:
    """One task's results in MTEB's TaskResult layout (``metrics``: our metrics JSON; numbers only)."""
    if main_metric not in metrics:
        raise KeyError(f"the headline metric {main_metric!r} is not among the task's metrics {sorted(metrics)}")
    scores = {
        k: float(v)
        for k, v in metrics.items()
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(float(v))
    }
    entry = {
        **scores,
        "main_score": float(metrics[main_metric]),
        "hf_subset": "default",
        "languages": [LANGUAGES.get(code, code) for code in languages],
    }
    return {
        "dataset_revision": dataset_revision,
        "task_name": task_name,
        "mteb_version": FORMAT_VERSION,
        "scores": {split: [entry]},
        "evaluation_time": evaluation_seconds,
        "kg_co2_emissions": None,
        "date": date,
    }


def model_meta(name: str, revision: str) -> dict[str, Any]:
    """The ``model_meta.json`` beside a model's results: its name and revision (what MTEB reads)."""
    return {"name": name, "revision": revision}


def model_results(
    name: str,
    revision: str,
    tasks: Mapping[str, Mapping[str, Any]],
    scores: Mapping[str, Mapping[str, Any]],
    out_dir: str | Path,
) -> list[Path]:
    """Write ``<out_dir>/<revision>/<task>.json`` for each task of ``scores`` (task -> the job's
    metrics JSON: an evaluate job's, or a fine-tune job's with its test metrics under ``metrics``)
    and ``model_meta.json`` beside them. ``tasks``: name -> metric (its headline), split,
    languages, files (for the dataset revision)."""
    import json

    from clinsent.io.files import write_text

    folder = Path(out_dir) / revision
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for task, job in scores.items():
        spec = tasks[task]
        metrics = job["metrics"] if isinstance(job.get("metrics"), Mapping) else job
        metrics = {k: v for k, v in metrics.items() if k != "seconds"}  # the job's time, not a score
        seconds = job.get("seconds")
        result = task_result(
            f"{TASK_PREFIX}{task}",
            str(spec["split"]),
            metrics,
            str(spec["metric"]),
            float(seconds) if seconds is not None else None,
            files_revision(spec["files"]),
            list(spec["languages"]),
        )
        path = folder / f"{TASK_PREFIX}{task}.json"
        write_text(json.dumps(result, indent=2), path)  # the one way out
        written.append(path)
    write_text(json.dumps(model_meta(name, revision), indent=2), folder / "model_meta.json")
    return written


def selection_note(task: str) -> str:
    """What a model's results say of the task its saved step was selected on."""
    return (
        f"`{TASK_PREFIX}{task}` is the eval set this model's saved step was selected on (the best point of its "
        "training curve): its score there is optimistically biased; compare models on the other tasks."
    )


def model_card(
    card_path: str | Path | None,
    name: str,
    results: list[dict[str, Any]],
    out_path: str | Path,
    notes: Iterable[str] = (),
) -> None:
    """The model's sentence-transformers card (``card_path``; a bare one when it has none) with its
    benchmark results as model-index metadata (huggingface_hub's ``EvalResult``), written offline;
    ``notes``: lines the results section states (the task a step was selected on)."""
    from huggingface_hub import EvalResult, ModelCard, ModelCardData

    text = Path(card_path).read_text(encoding="utf-8") if card_path and Path(card_path).is_file() else ""
    card = ModelCard(text) if text.startswith("---") else ModelCard(f"---\n---\n{text or f'# {name}'}\n")
    said = "".join(f"\n{line}\n" for line in notes)
    card.text = f"{card.text.rstrip()}\n\n## Benchmark results\n\n{NOTICE}\n{said}"
    data = card.data
    assert isinstance(data, ModelCardData)  # a ModelCard reads its front matter as model-card data
    data.model_name = name
    data.eval_results = [
        EvalResult(
            task_type=HF_TASKS.get(str(r["task"]), "feature-extraction"),
            dataset_type=str(r["task_name"]),
            dataset_name=str(r["task_name"]),
            dataset_split=split,
            dataset_revision=str(r["dataset_revision"]),
            metric_type=str(metric),
            metric_value=float(value),
            metric_name=f"{r['task_name']} {metric}",
        )
        for r in results
        for split, entries in r["scores"].items()
        for entry in entries
        for metric, value in entry.items()
        if metric not in ("hf_subset", "languages", "mteb_version") and isinstance(value, (int, float))
    ]
    card.save(str(out_path))


def write_model(
    model: Mapping[str, Any],
    tasks: Mapping[str, Mapping[str, Any]],
    metrics: Mapping[str, list[str]],
    out_dir: str | Path,
    cards: list[str] | None = None,
    log: Any = print,
) -> list[Path]:
    """Every seed's results of one model (``clinsent.plan.benchmark``'s view of it), from its jobs'
    metrics files (``metrics``: task -> one file per seed; the scores and the evaluation time,
    ``seconds``), and the model's card (``cards``: each seed's model folder's README.md) with them
    as model-index metadata; written atomically. Only the model's own files are read, so adding a
    model reruns no other model's results. A task the model's step was selected on
    (``model["selected_on"]``) is written like the others, and the card and the log say so
    (:func:`selection_note`)."""
    import json

    from clinsent.io.files import atomic_folder
    from clinsent.safety.places import inside

    out_dir = inside(out_dir, Path(out_dir).parent)  # never a folder reached through the model's name
    written: list[Path] = []
    selected = model.get("selected_on")
    notes = [selection_note(selected)] if isinstance(selected, str) and selected in metrics else []
    for line in notes:
        log(line)
    with atomic_folder(out_dir) as staging:
        staging.mkdir()
        for i, seed in enumerate(model["seeds"]):
            scores = {task: json.loads(Path(paths[i]).read_text(encoding="utf-8")) for task, paths in metrics.items()}
            revision = model["revisions"].get(seed) or model["revisions"].get(str(seed)) or NO_REVISION
            files = model_results(str(model["name"]), str(revision), tasks, scores, staging)
            results = [
                {
                    **json.loads(f.read_text(encoding="utf-8")),
                    "task": tasks[f.stem.removeprefix(TASK_PREFIX)].get("task", ""),
                }
                for f in files
            ]
            card = staging / str(revision) / "README.md"
            model_card(cards[i] if cards else None, str(model["name"]), results, card, notes)
            written += files
    return [out_dir / p.relative_to(staging) for p in written]
