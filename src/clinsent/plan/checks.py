"""The checks of a config, made while it is read, before any job, and :func:`build_plan`, which
reads a validated config through the registries and runs them (the user's files through
:mod:`clinsent.plan.input_checks`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from clinsent.config.names import check_names
from clinsent.config.sections import ModelEntry, RunConfig
from clinsent.corpus.sentences import RESERVED
from clinsent.errors import InputError
from clinsent.finetune.config import resolve_finetunes
from clinsent.methods.config import resolve_methods
from clinsent.models.base import PACKAGE_PREFIX, from_hub
from clinsent.plan.experiments import Grid
from clinsent.plan.input_checks import (
    check_data_use,
    check_data_use_keys,
    check_eval_headers,
    check_inputs,
    check_outputs,
    check_user_files,
)
from clinsent.plan.layout import Plan
from clinsent.plan.run import NOTES_INPUT, RunView
from clinsent.registry import did_you_mean, load_plugins
from clinsent.report.kinds.base import entries as kind_entries
from clinsent.run_ref import split_run
from clinsent.tasks.config import resolve_eval_sets


def check_formats(config: RunConfig) -> None:
    """Each input's format is a registered reader's name (the eval sets' are their tasks' knobs)."""
    from clinsent.config.declare import to_params
    from clinsent.config.sections import Notes
    from clinsent.corpus.notes import NOTE_READERS
    from clinsent.corpus.sentences import SENTENCE_FORMATS, corpus_format, corpus_paths
    from clinsent.data.training_rows import READERS

    if config.notes is not None:
        name = config.notes.format
        NOTE_READERS.get(name, where="config: notes.format")
        NOTE_READERS.ignored(name, to_params(config.notes), to_params(Notes()), "config: notes")
    for name, entry in config.sentence_corpora.items():
        for path in corpus_paths(entry.path):
            SENTENCE_FORMATS.get(corpus_format(path, entry.format), where=f"config: sentence_corpora.{name}.format")
    for name, data in config.training_data.items():
        READERS.get(data.format, where=f"config: training_data.{name}.format")


def _check_named_keys(parts: RunConfig) -> None:
    """The selection set names an eval set; the report's reference names a method."""
    if parts.selection_set is not None and parts.selection_set not in parts.eval_sets:
        raise InputError(
            "config: selection_set",
            f"{parts.selection_set!r} is not a key of eval_sets {list(parts.eval_sets)}",
            "name one of the eval sets, or null to keep each run's last step",
        )
    reference = parts.report.reference
    if reference is not None and reference not in parts.methods:
        raise InputError(
            "config: report.reference",
            f"{reference!r} is not a key of methods {list(parts.methods)}",
            "name the method every row is compared with, or null for the first untrained one",
        )


def build_plan(config: Mapping[str, Any], read_inputs: bool = True) -> Plan:
    """Read a validated config through the registries; a config error is an :class:`InputError`
    (or a ``ValueError`` from the table and figure references) naming the key and the fix.
    The door: the mapping is parsed once into the typed config (:class:`RunConfig`), and
    everything below reads that. ``read_inputs``: run every input's reader check and read the
    eval sets in full (:func:`check_inputs`): the dry run and the main Snakemake process do; a
    job's re-parse of the Snakefile does not (its run already did)."""
    parts = RunConfig.parse(config)  # the typed config: what the registries and the checks below read
    check_names(parts)  # entry names become path parts: ../phi, spaces, : and / are refused
    _check_named_keys(parts)
    for name in parts.sentence_corpora:
        if name in RESERVED:
            raise InputError(
                f"config: sentence_corpora.{name}",
                "the name is taken by the notes pipeline's sets",
                "rename the corpus",
            )
    # `plugins` (Python files or modules) may register more methods and tasks; every job script imports them too
    load_plugins(parts.plugins)
    check_formats(parts)
    reports = kind_entries(parts)  # each table and figure against its kind's keys, their defaults filled in
    methods = resolve_methods(parts)
    eval_sets = resolve_eval_sets(parts)
    finetune = resolve_finetunes(parts, eval_sets)
    grid = Grid.from_config(parts, methods)
    if parts.notes is None:
        for m, key in grid.batch_plan_of.items():
            if grid.batch_plans[key].source == "notes":
                raise InputError(
                    f"config: methods.{m}",
                    "trains on the notes pipeline's sets (sentences: notes), and the config has no `notes`",
                    "add a `notes` block, or set `sentences` to a key of sentence_corpora",
                )
    derived = [e.derived for e in methods.values() if e.derived]
    plan = Plan(RunView(parts, methods, eval_sets, finetune, grid, reports, derived))
    check_processes(plan)
    check_no_credentials(parts)
    check_model_folders(plan)
    check_corpus_embeddings(plan)
    check_user_files(plan)
    check_data_use_keys(plan)
    check_eval_headers(plan)
    if read_inputs:
        check_inputs(plan)
        check_data_use(plan)
        check_outputs(plan)
    check_doc_task_categories(parts)
    for key, kind, entry in plan.run.kinds():
        kind.check(key, entry, plan.view)
    check_shown_texts(plan)
    return plan


def check_no_credentials(config: RunConfig) -> None:
    """A configured URL carries no credentials (user information, a query string: a token, a
    signature): everything in the config may reach a job's params, which Snakemake records and
    prints ("Params have changed", with the old value), and the logs. The supported ways are named."""
    from urllib.parse import urlsplit

    release = config.ontology.release
    if release.url_env:
        return
    parts = urlsplit(release.url)
    if parts.username is not None or parts.password is not None or parts.query:
        carried = "a user name or password" if parts.username is not None else "a query string"
        raise InputError(
            "config: ontology.release.url",
            f"carries {carried} (a credential would reach the job's params, Snakemake's records and the logs)",
            f"remove it from the URL and put the login in a ~/.netrc entry for {parts.hostname or 'the host'} "
            "(read by the download), or, for a presigned link, export it in a variable and set "
            "ontology.release.url_env to the variable's name",
        )


def check_processes(plan: Plan, pool: list[str] | None = None) -> None:
    """A train job over several processes (``training.processes`` x ``training.nodes``) splits every
    batch evenly between them: each trained method's ``batch_size`` must divide by their count; on
    one node, where the run's GPU pool has devices (``pool``, once resolved), there must be one per
    process (without a GPU the processes share the CPU)."""
    t = plan.run.config.training
    total = t.processes * t.nodes
    if total > 1:
        for name, entry in plan.run.methods.items():
            size = getattr(entry.method.settings, "batch_size", None)
            if entry.method.trains and isinstance(size, int) and size % total:
                raise InputError(
                    f"config: methods.{name}.batch_size",
                    f"{size} rows cannot be split evenly between training.processes x training.nodes = {total} "
                    "processes",
                    f"use a batch_size divisible by {total} (e.g. {max(total, size - size % total)}), or change "
                    "training.processes",
                )
    if pool and t.nodes == 1 and t.processes > len(pool):
        raise InputError(
            "config: training.processes",
            f"{t.processes} processes, one per GPU, and the run's pool has {len(pool)} ({','.join(pool)})",
            f"set training.processes to at most {len(pool)}, or give the run more GPUs (gpus:)",
        )


def check_model_folders(plan: Plan) -> None:
    """A model entry written as a path (:func:`clinsent.models.base.looks_like_path`) must be an
    existing folder: it is never taken for a Hugging Face id, so a typo stops the dry run here
    rather than a job (or a download attempt) later. ``placeholders_ok`` lets it be missing. A
    Hugging Face id must fit the Hub's grammar (:func:`clinsent.config.names.check_hub_id`); a local
    folder must hold a model (:func:`clinsent.models.saved.check_model_folder`), read as the jobs
    will (its own pooling too, where a method asks for ``pooling: model``), the error naming the
    config key of the model (``models.<name>`` for a benchmark model)."""
    from clinsent.benchmark.models import METHOD_PREFIX
    from clinsent.config.names import check_hub_id
    from clinsent.models.base import looks_like_path, resolve_model
    from clinsent.models.saved import check_model_folder

    benchmark = plan.run.config.models or {}
    # `pooling: model` reads the folder's own pooling: a benchmark model's own entry says whether it
    # asks for it; any other base model is read with every method of the grid
    own_for_all = any(
        e.method.settings.pooling == "model" for n, e in plan.run.methods.items() if not n.startswith(METHOD_PREFIX)
    )

    def own_pooling(name: str) -> bool:
        entry = benchmark.get(name)
        if isinstance(entry, ModelEntry):
            return entry.pooling == "model"
        return own_for_all or isinstance(entry, str)

    for where, spec in plan.run.model_specs():
        if not isinstance(spec, str):
            continue
        section, _, name = where.partition(".")
        key = f"models.{name}" if section == "base_models" and name in benchmark else where
        if (
            not spec.startswith(PACKAGE_PREFIX)
            and looks_like_path(spec)
            and not os.path.isdir(os.path.expanduser(spec))
        ):
            if plan.run.placeholders_ok:
                continue
            raise InputError(
                f"config: {key}",
                f"{spec!r} is written as a path, and no such folder exists (from {os.getcwd()})",
                "correct the path (relative paths are from the workflow's "
                "directory); a Hugging Face id is `name` or `owner/name`",
            )
        if from_hub(spec):
            check_hub_id(spec, f"config: {key}")
            continue
        folder = resolve_model(spec, f"config: {key}")
        if os.path.isdir(folder):
            check_model_folder(folder, f"config: {key}", section == "base_models" and own_pooling(name))


def check_corpus_embeddings(plan: Plan) -> None:
    """Each corpus embedding names a trained run of this config (method@base_model, a seed among
    ``seeds``), and ``notes`` only where the config reads notes."""
    from clinsent.embedding.onnx_backend import check_backend

    trained = set(plan.run.trained_jobs())
    for name, entry in plan.run.corpus_embeddings.items():
        where = f"config: corpus_embeddings.{name}"
        check_backend(entry.backend, entry.quantize, where)
        method, base = split_run(entry.run, "")  # no default base: the run names its base model
        if method not in plan.run.methods or base not in plan.run.config.base_models:
            raise InputError(
                f"{where}.run",
                f"{entry.run!r} is not method@base_model of this config",
                f"write a key of methods, @, a key of base_models (e.g. {next(iter(plan.run.methods), 'm')}@"
                f"{next(iter(plan.run.config.base_models), 'b')})",
            )
        if plan.files.corpus_run(name) not in trained:
            raise InputError(
                f"{where}.seed",
                f"no run of {entry.run} with seed {plan.files.corpus_run(name)[2]} is in "
                "this config (its seeds, or the base model's evaluation)",
                f"use one of seeds {plan.run.seeds}",
            )
        if entry.input == NOTES_INPUT and not plan.run.notes:
            raise InputError(
                f"{where}.input", "notes, and the config has no `notes`", "add a `notes` block, or give a file"
            )
        _check_quality_set(plan, where, entry)


def _check_quality_set(plan: Plan, where: str, entry: Any) -> None:
    """A corpus embedding's ``quality_set``: an eval set of the config scored from embeddings, for
    a quantized embedding only (fp32 has nothing to compare)."""
    if entry.quality_set is None:
        return
    sets = plan.run.eval_sets
    if entry.quality_set not in sets or not sets[entry.quality_set].task.zero_shot:
        scored = [n for n, e in sets.items() if e.task.zero_shot]
        raise InputError(
            f"{where}.quality_set",
            f"{entry.quality_set!r} is not an eval set scored from embeddings"
            f"{did_you_mean(entry.quality_set, scored)}",
            f"name one of {scored}",
        )
    if entry.quantize == "none":
        raise InputError(
            f"{where}.quality_set",
            "measures what quantization costs, and this embedding is not quantized",
            "set quantize (int8 with backend onnx, bf16 with backend openvino), or drop quality_set",
        )


def check_doc_task_categories(config: RunConfig) -> None:
    """A document task's category that ``notes.categories`` leaves out of the ingest would be an
    empty class, silently dropped: stop naming its index (compared without surrounding spaces,
    as the task compares them). Categories that the notes lack are the jobs' check
    (:func:`clinsent.registry.check_values`): the ingest for ``notes.categories``, each
    ``doc_task`` job for its own."""
    ingested = config.notes.categories if config.notes is not None else None
    if not ingested:
        return
    kept = {str(c).strip() for c in ingested}
    for name, entry in config.doc_tasks.items():
        by_category = entry.label == "category"
        key = "categories" if by_category else "note_category"
        wanted = list(entry.categories or []) if by_category else [entry.note_category]
        for i, category in enumerate(wanted):
            if str(category).strip() not in kept:
                raise InputError(
                    f"config: doc_tasks.{name}.{key}" + (f"[{i}]" if key == "categories" else ""),
                    f"{category!r} is not among notes.categories {list(ingested)}: no note of it is "
                    "ingested, so the class would be empty",
                    "add it to notes.categories (or set that to null to keep every category), or remove it here",
                )


def check_shown_texts(plan: Plan) -> None:
    """PHI by construction: a table or figure that writes an eval set's texts into its shared
    output may show only a set marked ``text_shareable`` (public texts), and no set read from the
    notes or from a results folder made from them may be marked so. Checked when the config is
    read, before any job; the scan of the shared files (:mod:`clinsent.phi`) stays as a tripwire."""
    from clinsent.phi import derived_from_notes

    derived = {
        name: next(
            (f for f in e.task.files() if derived_from_notes(f, plan.run.results, plan.files.notes_paths)), None
        )
        for name, e in plan.run.eval_sets.items()
    }
    for name, e in plan.run.eval_sets.items():
        if e.text_shareable and derived[name]:
            raise InputError(
                f"config: eval_sets.{name}.text_shareable",
                f"the set is read from {derived[name]}, which is made from the notes: its texts are never shared",
                "drop text_shareable",
            )
    for key, kind, entry in plan.run.kinds():
        for where, name in kind.shown_texts(key, entry):
            if derived.get(name):
                raise InputError(
                    f"config: {where}",
                    f"shows texts of eval set {name!r}, read from {derived[name]}, "
                    "which is made from the notes: note text never goes into a shared table",
                    "show an eval set of public texts, or drop the entry",
                )
            if name in plan.run.eval_sets and not plan.run.eval_sets[name].text_shareable:
                raise InputError(
                    f"config: {where}",
                    f"shows texts of eval set {name!r}, which is not marked text_shareable",
                    f"set eval_sets.{name}.text_shareable: true if its texts are "
                    "public (never for credentialed data such as MedNLI or ClinicalSTS), or drop the entry",
                )
