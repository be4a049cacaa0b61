"""A trained model's card (its ``README.md``): what the model is and what it was trained on.

Sentence-transformers' stock card knows the modules only, so every saved model's ``README.md``
is replaced by this one, written offline from the run's own record (``selection.json``, the
curve) and nothing else:

- the base model (its Hugging Face id where the entry is one or the model's own files name one,
  a package folder, or "a local folder <name>": never a path, which would name the user's home),
  the evaluation length it is saved with (:mod:`clinsent.evaluation.length`), the method, its paper and equation
  (:attr:`clinsent.methods.base.Method.reference`) and every knob that differs from the
  method's defaults;
- the training data by its set's definition and size (:meth:`clinsent.data.TrainingData.summary`),
  for the notes their config key, format, note count and length filter, never a row or a path;
- in a release copy, the eval metrics with their 95% intervals beside the reference run's;
- the steps, the selected step and the metrics the train job measured on its selection and
  curve sets at that step; the hardware and software record (:mod:`clinsent.gpu.hardware`);
- the data-use notice of each training source: ``model_card.data_use`` in the config
  (``credentialed``, ``institutional``, ``open``, ``demo``; the notes default to
  ``credentialed``, anything else to unstated), linked to ``docs/sharing.md``.

The train job writes the card into the model folder; the ``release`` rule writes a release copy
(:mod:`clinsent.release.copies`: the model's files hard-linked, the card with the eval metrics added),
so evaluation never rewrites the model folder its own jobs read. The card holds counts, names from the config and
numbers only; like every shared file it passes the PHI scan (:mod:`clinsent.phi`).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from clinsent.config.sections import ModelCard

SHARING = "docs/sharing.md#releasing-weights"  # where the data-use notices point
DATA_USE: dict[str, str] = {
    "credentialed": "credentialed data (for example MIMIC-III, MedNLI or n2c2 through PhysioNet or DBMI). The weights "
    "are derived from it and fall under its data-use agreement: share them only where the agreement "
    "allows (PhysioNet hosts such weights as a credentialed Model project), never on an open hub",
    "institutional": "your institution's clinical notes. Share the weights only as your data-use agreement and "
    "ethics approval allow",
    "open": "data whose licence the config marks open. Check that it allows releasing derived weights",
    "demo": "the pipeline's generated demo data (DEMO DATA: no patient's notes). The weights only test the pipeline",
    "unstated": "data whose terms the config does not state (model_card.data_use). Check them before sharing",
}
DEFAULT_USE = {"notes": "credentialed"}  # conservative: the notes are MIMIC-III's layout
MEMORISATION = (
    "A language model can reproduce rows of its training text (Lehman et al. 2021, arXiv 2104.07762, on "
    "clinical BERT models): treat the weights of a model trained on notes like the notes."
)


_NAMED = re.compile(r"""SentenceTransformer\(\s*['"]([A-Za-z0-9][\w.-]*/[\w.-]+)['"]""")


def own_hub_id(folder: str | Path) -> str | None:
    """The hub id a model's own files name: its card's ``SentenceTransformer('owner/name')``
    usage line (sentence-transformers' cards have one), else None."""
    card = Path(folder) / "README.md"
    try:
        text = card.read_text(encoding="utf-8", errors="replace")[:200_000]
    except OSError:
        return None
    found = _NAMED.search(text)
    return found.group(1) if found else None


def base_model_id(spec: str) -> str | None:
    """The base model's hub id: the entry itself when it is one, else the id its own files name."""
    from clinsent.models.base import from_hub, resolve_model

    if from_hub(spec):
        return spec
    try:
        return own_hub_id(resolve_model(spec))
    except Exception:  # a package not installed here (a card rendered elsewhere): the entry as written
        return None


def base_model_label(spec: str) -> str:
    """The base model as the card names it: its hub id where it is one or its own files name one
    (with the package entry beside it), a package folder as written, a local folder by its last
    component only (its path would name the user's home)."""
    from clinsent.models.base import PACKAGE_PREFIX, from_hub

    if from_hub(spec):
        return spec
    hub = base_model_id(spec)
    where = spec if spec.startswith(PACKAGE_PREFIX) else f"a local folder named {Path(spec).expanduser().name or spec}"
    return f"{hub} ({where})" if hub else where


def changed_knobs(objective: str, settings: Mapping[str, Any]) -> dict[str, Any]:
    """The knobs of ``settings`` (a ``selection.json``'s) that differ from the method's defaults."""
    from clinsent.methods.config import default_settings

    def as_json(values: Mapping[str, Any]) -> dict[str, Any]:  # tuples and lists alike, as selection.json has them
        return dict(json.loads(json.dumps(values, default=list)))

    defaults, given = as_json(default_settings(objective)), as_json(settings)
    return {k: v for k, v in given.items() if k not in ("objective", "seed") and defaults.get(k, object()) != v}


def data_use(source: str, card: ModelCard | None) -> str:
    """The data-use class of one training source (``notes`` or a ``training_data`` /
    ``sentence_corpora`` key) from the config's ``model_card`` section (its ``data_use``)."""
    given = dict(DEFAULT_USE, **(card.data_use if card is not None else {}))
    return str(given.get(source, "unstated"))


def _number(value: Any) -> str:
    return "n/a" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.4f}"


def train_metrics(curve: pd.DataFrame, step: int) -> list[tuple[str, str, str]]:
    """(eval set, metric, value) at ``step`` from the train job's curve (selection and curve sets)."""
    rows = curve[(curve["step"] == step) & (curve["eval_set"].fillna("") != "")]
    return [(str(r.eval_set), str(r.metric), _number(r.score)) for r in rows.itertuples()]


def _table(header: tuple[str, ...], rows: Sequence[tuple[str, ...]]) -> list[str]:
    return [f"| {' | '.join(header)} |", f"|{'---|' * len(header)}", *(f"| {' | '.join(r)} |" for r in rows)]


def render(
    info: Mapping[str, Any],
    curve: pd.DataFrame,
    reference: str,
    base_model: str,
    card: ModelCard | None = None,
    eval_metrics: list[tuple[str, ...]] | None = None,
    baseline_run: str | None = None,
) -> str:
    """The card's markdown, from a run's ``selection.json`` (``info``), its curve, the method's
    reference and the base model entry; ``eval_metrics`` (eval set, metric, value, interval and,
    with ``baseline_run``, that run's value) for a release copy. Section by section, top to bottom."""
    data = info.get("training_data")
    use = data_use(str(data["source"]), card) if data else None
    lines = [
        *_front_matter(info, base_model, use, card),
        *_training(info, reference, base_model),
        *_measured(info, curve, eval_metrics, baseline_run),
        *_hardware(info),
        *_data_use(use),
        *USAGE,
    ]
    return "\n".join(lines)


def _front_matter(info: Mapping[str, Any], base_model: str, use: str | None, card: ModelCard | None) -> list[str]:
    """The card's metadata block (the Hub reads it): library, licence, tags, base model."""
    tags = ["sentence-transformers", "sentence-similarity", "clinical", "clinsent", str(info["objective"])]
    meta: dict[str, Any] = {
        "library_name": "sentence-transformers",
        "pipeline_tag": "sentence-similarity",
        "license": (card.licence if card is not None else None) or "other",
        "tags": tags,
    }
    if hub := base_model_id(base_model):
        meta["base_model"] = hub
    if use == "credentialed":
        tags.append("credentialed-data")
    return ["---", *(f"{k}: {json.dumps(v)}" for k, v in meta.items()), "---", ""]


def _training(info: Mapping[str, Any], reference: str, base_model: str) -> list[str]:
    """The title, the method and its paper, and how the model was trained: the base model, the
    steps and the selected one, the data, the evaluation length, the modules, the changed knobs."""
    settings = dict(info.get("settings") or {})
    objective = str(info["objective"])
    label = base_model_label(base_model)
    data = info.get("training_data")
    cited = f"see the {objective} method's module"
    selected = (
        f" (best {info['selection_metric']} on `{info['selection_set']}`)"
        if info.get("selection_set")
        else " (the last step: no selection set)"
    )
    lines = [
        f"# {objective} on {label}",
        "",
        f"A sentence-embedding model trained by the clinical sentence-embedding pipeline (clinsent) with the "
        f"**{objective}** objective: {reference or cited}.",
        "",
        "## Training",
        "",
        f"- Base model: {label}",
        f"- Method: `{objective}`, seed {settings.get('seed', 'n/a')}",
        f"- Steps: {settings.get('steps', 0)} (batch size {settings.get('batch_size', 'n/a')}{spread_clause(info)}); "
        f"selected step: {info.get('selected_step', 0)}{selected}",
        f"- Training data: {data_line(data)}"
        if data
        else "- Training data: none (the untrained base model with this pooling)",
    ]
    if info.get("eval_max_length"):
        lines.append(
            f"- Evaluation length: {int(info['eval_max_length'])} tokens per text (saved as the model's "
            f"max_seq_length, so every encode reads as many; training read {settings.get('max_length', 'n/a')})"
        )
    lines += module_lines(info, settings)
    changed = changed_knobs(objective, settings)
    lines += ["", "Settings that differ from the method's defaults:", ""]
    return lines + ([f"- `{k}`: `{json.dumps(v)}`" for k, v in sorted(changed.items())] or ["- none"])


def _measured(
    info: Mapping[str, Any],
    curve: pd.DataFrame,
    eval_metrics: list[tuple[str, ...]] | None,
    baseline_run: str | None,
) -> list[str]:
    """The metrics the train job measured at the selected step, and a release copy's eval metrics."""
    lines: list[str] = []
    measured = train_metrics(curve, int(info.get("selected_step", 0)))
    if measured:
        lines += ["", "## Metrics measured while training (at the selected step)", ""]
        lines += _table(("eval set", "metric", "value"), measured)
    if eval_metrics:
        header: tuple[str, ...] = ("eval set", "metric", "value", "95% interval")
        if baseline_run:
            header += (f"{baseline_run} (baseline)",)
        lines += ["", "## Evaluation", "", *_table(header, [r[: len(header)] for r in eval_metrics])]
        lines += ["", "The interval: a bootstrap over the eval set's items (docs/uncertainty.md)."]
    return lines


def _hardware(info: Mapping[str, Any]) -> list[str]:
    return [
        "",
        "## Hardware and software",
        "",
        f"- Device: {info.get('device_name', 'n/a')} ({info.get('device', 'n/a')}), precision "
        f"{info.get('precision', 'n/a')}",
        f"- torch {info.get('torch')}, transformers {info.get('transformers')}, sentence-transformers "
        f"{info.get('sentence_transformers')}",
        f"- Training time: {info.get('train_seconds', 'n/a')} s",
    ]


def _data_use(use: str | None) -> list[str]:
    """The data-use notice of the training data (docs/sharing.md), and the memorisation warning."""
    lines = ["", "## Data use and licence", ""]
    if use:
        lines += [f"This model was trained on {DATA_USE.get(use, DATA_USE['unstated'])}."]
        lines += ["", MEMORISATION] if use != "demo" else []
    else:
        lines += ["This model has no training of its own: the base model's licence applies."]
    return [*lines, "", f"See the pipeline's sharing guidance ({SHARING}) before releasing these weights."]


USAGE = [
    "",
    "## Usage",
    "",
    "```python",
    "from sentence_transformers import SentenceTransformer",
    "",
    'model = SentenceTransformer("path/to/this/folder")',
    'vectors = model.encode(["first sentence", "second sentence"])',
    "```",
    "",
]


def spread_clause(info: Mapping[str, Any]) -> str:
    """How the batch was split where the job ran over several processes (``over 4 processes of 128,
    nccl``), else nothing."""
    spread = info.get("processes") or {}
    if int(spread.get("processes") or 1) <= 1:
        return ""
    return f" over {spread['processes']} processes of {spread.get('rows_per_process')}, {spread.get('backend')}"


def module_lines(info: Mapping[str, Any], settings: Mapping[str, Any]) -> list[str]:
    """The card's lines on the saved model's modules: which it has, a ``Normalize`` kept from the
    base (unit vectors, as the base gives), and whose pooling it is where the base has its own."""
    modules = [str(m) for m in info.get("modules") or []]
    if not modules:
        return []
    base = [str(m) for m in info.get("base_modules") or []]
    line = f"- Modules: {' → '.join(modules)}"
    if modules[-1] == "Normalize":
        line += " (Normalize kept from the base model: every vector is a unit vector, as the base model's are)"
    out = [line]
    if "Pooling" in base:
        pooling = settings.get("pooling", "n/a")
        out.append(
            f"- Pooling: `{pooling}`, the base model's own"
            if info.get("base_pooling")
            else f"- Pooling: `{pooling}`, this method's, in place of the base model's own"
        )
    return out


def write(folder: str | Path, text: str) -> None:
    """Write (replace) the card of a model folder."""
    from clinsent.io.files import write_text

    write_text(text, Path(folder) / "README.md")


def data_line(data: Mapping[str, Any]) -> str:
    """The card's training-data line: the sentences by their set's definition and size, and for
    the notes their config key, format, note count and length filter (never a path)."""
    drawn = f"{int(data['rows']):,} {data['unit']}"
    if data.get("of_rows"):  # what training drew, and the size of the set it drew from
        drawn = f"training drew {int(data['rows']):,} of its {int(data['of_rows']):,} {data['unit']}"
    line = f"{data['description']}, {drawn}"
    notes = data.get("notes_entry")
    if notes:
        count = f"{int(data['notes']):,} notes, " if data.get("notes") else ""
        if data.get("notes") and data.get("of_notes"):
            count = f"{int(data['notes']):,} of its {int(data['of_notes']):,} notes, "
        line += (
            f" from {count}config key `{notes['key']}` (format `{notes['format']}`); the length filter keeps "
            f"sentences of at least {int(notes['min_words'])} words"
        )
    return line


def _interval(values: Mapping[str, Any], metric: str) -> str:
    low, high = (values.get("ci") or {}).get(metric, (None, None))
    return "n/a" if low is None or high is None else f"[{_number(low)}, {_number(high)}]"


def eval_rows(
    metrics: Mapping[str, str | Path],
    headlines: Mapping[str, str],
    baseline: Mapping[str, str | Path] | None = None,
) -> list[tuple[str, ...]]:
    """(eval set, headline metric, value, 95% interval, the baseline run's value) from the
    evaluate jobs' metrics files (``baseline``: eval set -> the reference run's file)."""
    rows: list[tuple[str, ...]] = []
    for name, path in metrics.items():
        values = json.loads(Path(path).read_text())
        metric = headlines[name]
        base = json.loads(Path(baseline[name]).read_text()) if baseline and name in baseline else {}
        rows.append(
            (
                name,
                metric,
                _number(values.get(metric)),
                _interval(values, metric),
                f"{_number(base.get(metric))} {_interval(base, metric)}" if base else "n/a",
            )
        )
    return rows
