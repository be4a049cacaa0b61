"""The user's files, checked while a config is read (:func:`clinsent.plan.checks.build_plan`),
before any job: each one the config names exists (:func:`check_user_files`); each goes through its
reader's check and the eval sets are read in full (:func:`check_inputs`); the eval sets' header
lines (:func:`check_eval_headers`); the notes are the demo's where the cards say so
(:func:`check_data_use`). Every error names the config key, the file, the row and the fix, never
a row's text. Files a job writes, and files missing under ``placeholders_ok``, are their jobs' to check.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from clinsent.config.declare import to_params
from clinsent.data.readers import entry_paths
from clinsent.errors import InputError
from clinsent.paths import DOC_TASK, RESULTS, fill
from clinsent.plan.run import NOTES_INPUT

if TYPE_CHECKING:
    from clinsent.plan.layout import Plan


def check_user_files(plan: Plan) -> None:
    """Every input file the config names exists, or the dry run stops naming each missing one
    with the key to set (before, Snakemake said "Missing input files" with paths only).
    ``placeholders_ok`` leaves missing files out of the DAG instead."""
    if plan.run.placeholders_ok:
        return
    missing = [(k, p) for k, p in plan.files.user_files() if not os.path.exists(os.path.expanduser(p))]
    if missing:
        more = "; ".join(f"{k}: {p}" for k, p in missing[1:])
        raise InputError(
            f"config: {missing[0][0]}",
            f"{missing[0][1]} does not exist (from {os.getcwd()})"
            + (f"; {len(missing) - 1} more missing: {more}" if more else ""),
            "set each of these keys to your copy of the file (relative paths are from the workflow's "
            "directory); to see the jobs before the data is there, dry-run with "
            "--config placeholders_ok=true",
        )
    from clinsent.plan.jobs import made_by

    for key, path in plan.files.user_files(under_results=True):
        if not os.path.exists(path) and made_by(plan, path) is None:
            raise InputError(
                f"config: {key}",
                f"{path} lies inside the results folder {plan.run.results}, does not exist, and no step of this "
                "run makes it",
                "point the key at your copy of the file outside the results folder, or at a file a step of this "
                f"run writes (e.g. a document task's table, {RESULTS}/{fill(DOC_TASK, task='<task>')})",
            )


def check_outputs(plan: Plan) -> None:
    """No output of the run, nor a folder between the results folder and it, is a symbolic link:
    Snakemake would take a link to an existing file (an input, another run's output) as done, and
    a writer would write through it (:mod:`clinsent.safety.places`). Run at dry run, over every
    job of the run from scratch (:func:`clinsent.plan.jobs.jobs`)."""
    from clinsent.plan.jobs import jobs

    root, seen = Path(plan.run.results), set()
    for job in jobs(plan):
        for out in job.outputs:
            if not plan.run.tree.holds(out):
                continue
            at = root
            for part in Path(out).relative_to(root).parts:
                at = at / part
                if at in seen:
                    continue
                seen.add(at)
                if at.is_symlink():
                    raise InputError(
                        at,
                        f"is a symbolic link (to {os.readlink(at)}), and the step {job.rule} writes "
                        f"{'it' if str(at) == out else out}: an output is written in place, never through a link, "
                        "and a link to an existing file would be taken as done",
                        f"remove the link ({at}); the step then writes its output itself",
                    )


def _ours(plan: Plan, path: str) -> bool:
    """A user file the dry run can read: it exists and no job of the run writes it."""
    return os.path.exists(os.path.expanduser(path)) and not plan.run.tree.holds(path)


def check_inputs(plan: Plan) -> None:
    """Every configured input through its reader's check (:mod:`clinsent.io.reading`: header, format,
    first block), and every eval set read in full through its task (they are small: a non-finite
    gold score, a bad row anywhere stops here), each error naming the config key, the file, the
    row and the fix, never a row's text. Files a job writes, and files missing under
    ``placeholders_ok``, are checked by their jobs."""
    from clinsent.corpus.notes import NOTE_READERS
    from clinsent.corpus.sentences import SENTENCE_FORMATS, corpus_format, corpus_paths
    from clinsent.data.training_rows import READERS
    from clinsent.embedding.texts import check_input
    from clinsent.io.reading import keyed

    notes = plan.run.config.notes
    if notes is not None:
        from clinsent.corpus.notes import check_listed_once

        check_listed_once(list(plan.files.notes_paths))
        for path in plan.files.notes_paths:
            if _ours(plan, path):
                NOTE_READERS.check(notes.format, path, to_params(notes), "notes.path")
    if plan.run.note_entities and plan.run.config.ontology.path:
        from clinsent.ontology.obo import ONTOLOGY_FORMATS

        for key, path in plan.files.user_files():
            if key == "ontology.path" and _ours(plan, path):
                ONTOLOGY_FORMATS.check("obo", Path(path), {}, key)
    for name, corpus in plan.run.config.sentence_corpora.items():
        for path in corpus_paths(corpus.path):
            if _ours(plan, path):
                fmt = corpus_format(path, corpus.format)
                SENTENCE_FORMATS.check(fmt, path, to_params(corpus), f"sentence_corpora.{name}.path")
    for name, data in plan.run.config.training_data.items():
        for path in entry_paths(data.path):
            if _ours(plan, path):
                READERS.check(data.format, path, to_params(data), f"training_data.{name}.path")
    for name, entry in plan.run.corpus_embeddings.items():
        if entry.input != NOTES_INPUT and _ours(plan, entry.input):
            check_input(Path(entry.input), to_params(entry), f"corpus_embeddings.{name}.input")
    for name, e in plan.run.eval_sets.items():
        if all(_ours(plan, f) for f in e.task.files()):
            with keyed(f"eval_sets.{name}", ", ".join(e.task.files()), f"an eval set of task {e.task.name}"):
                e.task.read()


def data_use_sources(plan: Plan) -> dict[str, list[str]]:
    """The training sources a model card describes, each with its files: ``notes`` (the notes'
    files) and each ``training_data`` and ``sentence_corpora`` entry."""
    from clinsent.corpus.sentences import corpus_paths

    sources = {"notes": list(plan.files.notes_paths) if plan.run.notes else []}
    sources |= {name: entry_paths(entry.path) for name, entry in plan.run.config.training_data.items()}
    sources |= {name: corpus_paths(entry.path) for name, entry in plan.run.config.sentence_corpora.items()}
    return sources


def check_data_use_keys(plan: Plan) -> None:
    """Every ``model_card.data_use`` entry names a training source of the run (an unknown one would
    be ignored, and the card would say "unstated" of the source meant)."""
    from clinsent.errors import shown
    from clinsent.registry import did_you_mean

    sources = data_use_sources(plan)
    for key in plan.run.config.model_card.data_use:
        if key not in sources:
            raise InputError(
                "config: model_card.data_use",
                f"{shown(key)} is not a training source of this run{did_you_mean(str(key), list(sources))} (the "
                f"sources: {', '.join(sources)})",
                "name notes, or a key of training_data or sentence_corpora; remove the entry of a source the run "
                "does not have",
            )


def check_data_use(plan: Plan) -> None:
    """``model_card.data_use.<source>: demo`` (the cards then say "no patient's notes" and drop the
    memorisation warning) only where the source is the packaged demo data, recognised by content
    (:mod:`clinsent.demo.recognise`): the notes by each note's text, a training-data or sentence
    corpus by each of its files' bytes. A config that inherits the key from the demo config and
    reads a hospital's notes, or the demo MedNLI file with one real row added, stops here."""
    from clinsent.demo.recognise import are_demo_notes, is_demo_file

    uses = plan.run.config.model_card.data_use
    fix = (
        "set model_card.data_use.{0} to credentialed (MIMIC-III/IV, MedNLI, n2c2), institutional (your "
        "hospital's data) or open in your config; a config with base: config/config.yaml inherits demo from it"
    )
    for source, files in data_use_sources(plan).items():
        if uses.get(source) != "demo" or not files or not all(_ours(plan, p) for p in files):
            continue
        if source == "notes":
            if not are_demo_notes(to_params(plan.run.config.notes)):
                raise InputError(
                    "config: model_card.data_use.notes",
                    "says demo (the pipeline's generated notes, no patient's), and the notes read from notes.path "
                    "are not the packaged demo notes: every model card would say so and drop its warning that "
                    "weights can reproduce training text",
                    fix.format("notes"),
                )
            continue
        other = next((f for f in files if not is_demo_file(f)), None)
        if other is not None:
            raise InputError(
                f"config: model_card.data_use.{source}",
                f"says demo (the pipeline's generated data), and {other} is not one of the packaged demo files "
                "(compared byte for byte): every model card would say so and drop its warning that weights can "
                "reproduce training text",
                fix.format(source),
            )


def check_eval_headers(plan: Plan) -> None:
    """Each eval set's header lines (e.g. a split asked of a file without a split column), read
    while the config is read: a header line only, not a row, so nothing of the data is shown or
    held. Files a job writes, and files missing under ``placeholders_ok``, are checked in their job."""
    from clinsent.io.reading import keyed

    for name, entry in plan.run.eval_sets.items():
        files = entry.task.files()
        if all(_ours(plan, f) for f in files):
            with keyed(f"eval_sets.{name}", ", ".join(files), f"an eval set of task {entry.task.name}"):
                entry.task.check_header()
