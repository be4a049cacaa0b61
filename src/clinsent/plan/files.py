"""Where a run's files live (:class:`RunFiles`): the models, embeddings and sentence sets under
the results folder, the corpus embeddings, and the user's own files (the notes, eval sets,
training data, models), which a dry run with ``placeholders_ok`` leaves out when they are missing.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from clinsent import paths
from clinsent.config.declare import to_params
from clinsent.data.readers import entry_paths
from clinsent.models.base import PACKAGE_PREFIX, from_hub, hub_slug
from clinsent.plan.run import NOTES_INPUT, RunView
from clinsent.run_ref import split_run


@dataclass(frozen=True)
class RawInput:
    """A raw input of the run (a file or folder the user supplies, outside the results folder): the
    config keys that name it, its key file (``inputs/<name>.key``: rewritten only when its content
    changes) and its stat record (:mod:`clinsent.safety.stamps`, :mod:`clinsent.runner.staleness`)."""

    path: str
    keys: tuple[str, ...]
    key: str
    stat: str


def input_name(path: str) -> str:
    """The name of a raw input's key file: its base name (characters other than letters, digits,
    ``.``, ``_`` and ``-`` replaced) and 8 hex of its absolute path, so two files of one name differ."""
    absolute = os.path.abspath(os.path.expanduser(path))
    base = re.sub(r"[^A-Za-z0-9._-]", "_", os.path.basename(absolute.rstrip("/")) or "input")[:80]
    return f"{base.lstrip('.') or 'input'}-{hashlib.sha256(absolute.encode()).hexdigest()[:8]}"


class RunFiles:
    """The plan's files: those under the results folder (:mod:`clinsent.paths`' templates filled)
    and the user's input files, of one run (its :class:`RunView`)."""

    def __init__(self, run: RunView) -> None:
        self.run = run

    def corpus_run(self, name: str) -> tuple[str, str, int]:
        """(method, base model, seed) of the run a corpus embedding uses."""
        entry = self.run.corpus_embeddings[name]
        method, base = split_run(entry.run, "")
        return method, base, entry.seed if entry.seed is not None else self.run.seeds[0]

    def corpus_input(self, name: str) -> str:
        """The file a corpus embedding reads: ``notes`` is the notes' sentence sets."""
        given = self.run.corpus_embeddings[name].input
        return self.sets_path() if given == NOTES_INPUT else given

    def corpus_quality_set(self, name: str) -> str | None:
        """The eval set a corpus embedding's quantized vectors are scored on and, with OpenVINO's
        int8, made within (:mod:`clinsent.embedding.int8_bound`): its ``quality_set``; else, for
        OpenVINO's int8, the selection set of the method whose run it embeds with, where that set
        is scored from embeddings (data the user named); else none."""
        entry = self.run.corpus_embeddings[name]
        if entry.quality_set is not None:
            return entry.quality_set
        if entry.backend != "openvino" or entry.quantize != "int8":
            return None
        method = self.run.methods.get(self.corpus_run(name)[0])
        chosen = method.selection_set if method is not None else None
        sets = self.run.eval_sets
        return chosen if chosen in sets and sets[chosen].task.zero_shot else None

    def corpus_params(self, name: str) -> dict[str, Any]:
        """The embed settings of one corpus embedding (the rule's params); ``private``: the notes'
        sentences, a file the entry marks so, or a file under a results folder made from the notes
        (:func:`clinsent.phi.protect.derived_from_notes`); a file nobody else can reach is private
        too, decided in the job (:func:`clinsent.embedding.corpus.embed_corpus`)."""
        from clinsent.phi.protect import derived_from_notes

        entry = self.run.corpus_embeddings[name]
        notes = entry.input == NOTES_INPUT
        derived = notes or derived_from_notes(entry.input, self.run.results, self.notes_paths)
        # less what the inputs say (run, seed, input) and what changes no output (threads: the rule's
        # own; memory: the rule's untracked param)
        unread = ("run", "seed", "input", "threads", "memory")
        params = {k: v for k, v in to_params(entry).items() if k not in unread}
        params["private"] = derived or entry.private
        if notes:  # the notes' sentence sets
            params.update(column="text", id_column="sent_id")
        quality = self.corpus_quality_set(name)
        if quality is not None:  # its task, rebuilt in the job (what its score depends on)
            params["quality_set"] = quality
            params["quality_task"] = self.run.eval_sets[quality].params()
        return params

    def corpus_memory(self, name: str) -> str:
        """How a corpus embedding's job keeps its heap (``memory``): fast or flat; changes no output."""
        return self.run.corpus_embeddings[name].memory

    def corpus_gpu(self, name: str, shard: bool) -> bool:
        """Whether a corpus embedding's job (a shard's, or the whole one's) may use a GPU: the torch
        backend does; ONNX Runtime and OpenVINO run on the CPU, and the job that joins shards embeds nothing."""
        entry = self.run.corpus_embeddings[name]
        return entry.backend == "torch" and (shard or entry.shards == 1)

    def corpus_threads(self, name: str, shard: bool) -> int:
        """A corpus embedding job's CPU threads: its entry's, or one for the job that joins shards."""
        entry = self.run.corpus_embeddings[name]
        return entry.threads if shard or entry.shards == 1 else 1

    def corpus_shards(self, name: str) -> int:
        """How many shard jobs a corpus embedding runs (1: the one job writes the output)."""
        return self.run.corpus_embeddings[name].shards

    def corpus_parts(self, name: str) -> list[str]:
        """A sharded corpus embedding's parts, in shard order (each its own job's output)."""
        return [
            self.run.tree.file(paths.CORPUS_EMBEDDING_PART, embedded_corpus=name, part=f"{k:03d}")
            for k in range(self.corpus_shards(name))
        ]

    def corpus_embedding_files(self) -> list[str]:
        return [
            self.run.tree.file(paths.CORPUS_EMBEDDING, embedded_corpus=name) for name in self.run.corpus_embeddings
        ]

    def model_dir(self, method: str, base_model: str, seed: int | str) -> str:
        return self.run.tree.file(paths.MODEL_DIR, method=method, base_model=base_model, seed=seed)

    def run_file(self, template: str, method: str, base_model: str, seed: int | str) -> str:
        """A file of one run (its model, curve, record or checkpoints: :mod:`clinsent.paths`)."""
        return self.run.tree.file(template, method=method, base_model=base_model, seed=seed)

    def metrics(self, method: str, base_model: str, seed: int | str, eval_set: str) -> str:
        """A run's zero-shot metrics on one eval set."""
        return self.run.tree.file(paths.METRICS, method=method, base_model=base_model, seed=seed, eval_set=eval_set)

    def finetune_metrics(self, method: str, base_model: str, seed: int | str, entry: str) -> str:
        """A run's metrics after one fine-tune entry."""
        return self.run.tree.file(paths.FINETUNE, method=method, base_model=base_model, seed=seed, finetune=entry)

    def embeddings(self, method: str, base_model: str, seed: int | str, eval_set: str) -> str:
        return self.run.tree.file(paths.EMBEDDINGS, method=method, base_model=base_model, seed=seed, eval_set=eval_set)

    def sets_path(self) -> str:
        """The notes' sentence sets: with entities (``sentence_sets``), or S_all alone (``sentence_set_all``;
        the same sentences, ids and order)."""
        return self.entity_sets_path() if self.run.note_entities else self.s_all_path()

    def entity_sets_path(self) -> str:
        return self.run.tree.file(paths.ENTITY_SETS)

    def s_all_path(self) -> str:
        return self.run.tree.file(paths.S_ALL)

    def sets_counts_path(self) -> str:
        return self.run.tree.file(paths.ENTITY_SETS_COUNTS if self.run.note_entities else paths.S_ALL_COUNTS)

    def linked_path(self) -> str:
        return self.run.tree.file(paths.LINKED)

    def corpus_stats_path(self, corpus: str) -> str:
        return self.run.tree.file(paths.SENTENCE_CORPUS_STATS, sentence_corpus=corpus)

    def documents_stats_path(self) -> str:
        return self.run.tree.file(paths.DOCUMENTS_STATS)

    def data_paths(self) -> dict[str, str]:
        """Where the training data of the DAG lives (the notes pipeline's sets; sentence corpora under results)."""
        if not self.run.notes:
            return {"results": self.run.results, "sets": "", "linked": ""}
        return {
            "results": self.run.results,
            "sets": self.sets_path(),
            "linked": self.linked_path() if self.run.note_entities else "",
        }

    def external(self, files: Iterable[str]) -> list[str]:
        """Input files the user supplies; with placeholders_ok, missing ones are left out (dry runs).
        Files under the results folder (e.g. a doc_task's table as an eval set's path) are the DAG's own."""
        return [p for p in files if not self.run.placeholders_ok or os.path.exists(p) or self.run.tree.holds(p)]

    def external_file(self, path: str) -> str | list[str]:
        """One user-supplied input file, or none when it is a placeholder of a dry run."""
        return path if not self.run.placeholders_ok or os.path.exists(path) else []

    @property
    def notes_paths(self) -> list[str]:
        """The notes' file(s) (``notes.path``: a path or a list of them)."""
        return _as_paths(self.run.config.notes.path if self.run.config.notes is not None else None)

    @property
    def hub_dir(self) -> str:
        return self.run.config.hub_dir

    def hub_folder(self, spec: str) -> str:
        """Where ``download_model`` fetches a Hugging Face id (:func:`clinsent.models.base.hub_slug`)."""
        return f"{self.hub_dir}/{hub_slug(spec)}"

    def model_inputs(self, specs: Iterable[str]) -> list[str]:
        """The files behind model specs that a job declares as inputs: a local folder, or the folder
        ``download_model`` fetches a Hugging Face id into (a DAG edge: the download, a local rule,
        runs on the submitting host before any job that loads the model; a folder under the results
        folder, a model this config trains: the benchmark's). Packaged models are not the DAG's."""
        return [
            self.hub_folder(s) if from_hub(s) else s
            for s in specs
            if not s.startswith(PACKAGE_PREFIX) and (from_hub(s) or os.path.exists(s) or self.run.tree.holds(s))
        ]

    def user_files(self, under_results: bool = False) -> list[tuple[str, str]]:
        """(config key, path) of every input file the user supplies: the notes, the MedCAT pack and a
        local ontology (where the entity stage runs), each eval set's, training-data, sentence-corpus and
        document-task file. Files under the results folder are the DAG's own and are left out
        (``under_results``: only those)."""
        from clinsent.corpus.sentences import corpus_paths

        found = [("notes.path", p) for p in self.notes_paths]
        if self.run.note_entities:  # read only where the entity stage runs
            found += [("ner.model_pack", p) for p in _as_paths(self.run.config.ner.model_pack)]
            found += [("ontology.path", p) for p in _as_paths(self.run.config.ontology.path)]
        for name, e in self.run.eval_sets.items():
            entry = self.run.config.eval_sets[name].options  # the task's keys name its files
            for f in e.task.files():
                key = next((k for k, v in entry.items() if v == f or (isinstance(v, list) and f in v)), "path")
                found.append((f"eval_sets.{name}.{key}", f))
        for name, data in self.run.config.training_data.items():
            found += [(f"training_data.{name}.path", p) for p in entry_paths(data.path)]
        for name, corpus in self.run.config.sentence_corpora.items():
            found += [(f"sentence_corpora.{name}.path", p) for p in corpus_paths(corpus.path)]
        for name, task in self.run.config.doc_tasks.items():
            files = (("diagnoses", task.diagnoses), ("mapping", task.mapping))
            found += [(f"doc_tasks.{name}.{k}", p) for k, p in files if p]
        found += [
            (f"corpus_embeddings.{n}.input", e.input)
            for n, e in self.run.corpus_embeddings.items()
            if e.input != NOTES_INPUT
        ]
        return [(k, p) for k, p in found if self.run.tree.holds(p) == under_results]

    @functools.cached_property
    def raw_inputs(self) -> dict[str, RawInput]:
        """Every raw input of the run, by the path the rules declare: the user's files
        (:meth:`user_files`: the notes, eval sets, training data, the ontology and MedCAT pack,
        sentence corpora, document tasks' files, corpus-embedding inputs) and the models given as
        local folders, those that exist outside the results folder. Each enters its jobs as
        ``ancient()`` beside its key file (:func:`clinsent.plan.rules.base.keyed`), so what reruns a
        job is its content."""
        found: dict[str, list[str]] = {}
        for key, path in self.user_files():
            found.setdefault(path, []).append(key)
        for key, spec in self.run.model_specs():
            if isinstance(spec, str) and not spec.startswith(PACKAGE_PREFIX) and not from_hub(spec):
                found.setdefault(spec, []).append(key)
        out = {}
        for path, keys in found.items():
            if self.run.tree.holds(path) or not os.path.exists(os.path.expanduser(path)):
                continue
            name = input_name(path)
            key = self.run.tree.file(paths.INPUT_KEY, input_name=name)
            out[path] = RawInput(
                path, tuple(dict.fromkeys(keys)), key, self.run.tree.file(paths.INPUT_STAT, input_name=name)
            )
        return out

    def eval_set_files(self, name: str) -> list[str]:
        return self.external(self.run.eval_sets[name].task.files())

    def doc_task_files(self, name: str) -> list[str]:
        """The user files an ICD-9 triage task reads besides the documents (diagnoses, mapping)."""
        task = self.run.config.doc_tasks[name]
        return self.external([p for p in (task.diagnoses, task.mapping) if p])

    def training_data_files(self, source: str) -> list[str]:
        return self.external(entry_paths(self.run.config.training_data[source].path))

    def ner_pack(self) -> str | list[str]:
        """The user's MedCAT pack (slimmed to the kept types if asked), or the one built from the ontology."""
        ner = self.run.config.ner
        if not ner.model_pack:
            return self.run.tree.file(paths.MEDCAT_PACK)
        if ner.slim_pack:
            return self.run.tree.file(paths.SLIM_PACK)
        return self.external_file(ner.model_pack)

    def ontology_file(self) -> str | list[str]:
        """The local ontology file, or the pinned release downloaded by ``download_ontology``."""
        path = self.run.config.ontology.path
        return self.external_file(path) if path else self.run.ontology_download


def _as_paths(value: Any) -> list[str]:
    """A config value that is a path or a list of paths (None: none)."""
    return [value] if isinstance(value, str) else [str(v) for v in value or [] if isinstance(v, str)]
