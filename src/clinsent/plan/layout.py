"""The layout of a run (:class:`Plan`): paths, wildcards, every rule's inputs and params, the job
grid; what the rules ask through thin input functions (``workflow/rules/common.smk``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from clinsent.corpus.shards import shard_names
from clinsent.data.plan import sentence_corpus_path
from clinsent.data.readers import entry_paths
from clinsent.experiments import Grid, split_run
from clinsent.finetune.config import CROSS_ENCODER, FinetuneEntry
from clinsent.methods.config import MethodEntry, run_models
from clinsent.models.base import PACKAGE_PREFIX, hub_slug, is_hub_id
from clinsent.ontology.download import release_url
from clinsent.report.kinds.base import Kind, TableKind
from clinsent.report.kinds.base import entries as kind_entries
from clinsent.tasks.config import EvalSetEntry

Job = tuple[str, str, int]  # (method, base model, seed)


NOTES_INPUT = "notes"  # corpus_embeddings.<name>.input: the notes' split sentences


@dataclass
class Plan:
    """Everything the rules need from one config (see the module docstring)."""

    config: dict[str, Any]
    methods: dict[str, MethodEntry]
    eval_sets: dict[str, EvalSetEntry]
    finetune: dict[str, FinetuneEntry]
    grid: Grid
    derived: list[str] = field(default_factory=list)  # how steps were derived from epochs (shown in dry runs)
    _cache: dict[Any, Any] = field(default_factory=dict, repr=False)

    # -- the config's shape -------------------------------------------------------------------------------------
    @property
    def results(self) -> str:
        return str(self.config["results"])

    @property
    def seeds(self) -> list[int]:
        return [int(s) for s in self.config["seeds"]]

    @property
    def notes(self) -> bool:
        """The notes pipeline (ingest, and with sentence methods split -> NER -> sets) is in the DAG."""
        return bool(self.config.get("notes"))

    @property
    def sentence_corpora(self) -> list[str]:
        return list(self.config.get("sentence_corpora") or {})

    @property
    def training_data(self) -> list[str]:
        return list(self.config.get("training_data") or {})

    @property
    def doc_tasks(self) -> list[str]:
        return list(self.config.get("doc_tasks") or {})

    @property
    def plans(self) -> dict[str, dict[str, Any]]:
        """Batch plans, shared by every method with the same corpus, strategy and size."""
        return self.grid.plans

    @property
    def tables(self) -> dict[str, Any]:
        return dict(self.config.get("tables") or {})

    @property
    def figures(self) -> dict[str, Any]:
        return dict(self.config.get("figures") or {})

    @property
    def placeholders_ok(self) -> bool:
        """Dry runs of a config with placeholder paths leave missing external inputs out of the DAG."""
        return str(self.config.get("placeholders_ok", False)).lower() == "true"

    @property
    def note_sentences(self) -> bool:
        """The notes' sentence pipeline runs when a method trains on its sets, a table shows them or
        a corpus embedding reads them."""
        return self.notes and (
            any(p["source"] == "notes" for p in self.plans.values())
            or any(kind.note_sentences for _, kind, _ in self.kinds())
            or any(e["input"] == NOTES_INPUT for e in self.corpus_embeddings.values())
        )

    # -- corpus embeddings (the corpus_embeddings target; clinsent.corpus_embed) ------------------------------
    @property
    def corpus_embeddings(self) -> dict[str, dict[str, Any]]:
        return dict(self.config.get("corpus_embeddings") or {})

    def corpus_run(self, name: str) -> tuple[str, str, int]:
        """(method, base model, seed) of the run a corpus embedding uses."""
        entry = self.corpus_embeddings[name]
        method, _, base = str(entry["run"]).partition("@")
        return method, base, int(entry["seed"] if entry.get("seed") is not None else self.seeds[0])

    def corpus_input(self, name: str) -> str:
        """The file a corpus embedding reads: ``notes`` is the notes' sentence sets."""
        given = str(self.corpus_embeddings[name]["input"])
        return self.sets_path() if given == NOTES_INPUT else given

    def corpus_params(self, name: str) -> dict[str, Any]:
        """The embed settings of one corpus embedding (the rule's params); ``private``: from the notes."""
        entry = self.corpus_embeddings[name]
        notes = entry["input"] == NOTES_INPUT
        return {
            "column": "text" if notes else entry.get("column"),
            "id_column": "sent_id" if notes else entry.get("id_column"),
            "keep_text": bool(entry.get("keep_text", False)),
            "batch_size": int(entry.get("batch_size", 64)),
            "chunk": int(entry.get("chunk", 10_000)),
            "private": notes,
        }

    def release_dir(self) -> str:
        """The release copies of the run's trained models (one ``release`` job writes them all)."""
        return f"{self.results}/release"

    def release_runs(self) -> list[dict[str, Any]]:
        """Each run that trains (an untrained base model's release is its own): its folder under the
        release copy, its model, record and curve, its zero-shot metrics files with their headlines,
        and its base model entry (the card names it)."""
        runs = []
        for m, b, s in self.trained_jobs():
            if not self.methods[m].method.trains:
                continue
            metrics = {
                e: f"{self.results}/metrics/{m}/{b}/seed{s}/{e}.json"
                for mm, bb, ss, e in self.zero_shot()
                if (mm, bb, ss) == (m, b, s)
            }
            run = self.model_dir(m, b, s)
            runs.append(
                {
                    "folder": f"{m}/{b}/seed{s}",
                    "model": f"{run}/model",
                    "selection": f"{run}/selection.json",
                    "curve": f"{run}/curve.csv",
                    "metrics": metrics,
                    "base_model": str(self.config["base_models"][b]),
                    "headlines": {e: self.eval_sets[e].task.headline for e in metrics},
                }
            )
        return runs

    def release_dirs(self) -> list[str]:
        """The release folder, where a run trains (the targets of ``all`` and the PHI scan)."""
        return [self.release_dir()] if self.release_runs() else []

    def corpus_embedding_files(self) -> list[str]:
        return [f"{self.results}/corpus_embeddings/{name}.parquet" for name in self.corpus_embeddings]

    @property
    def note_entities(self) -> bool:
        """The entity stage (ontology, MedCAT pack, NER, linking, S_ent / S_none and their statistics)
        runs only when a method's training data needs it (:meth:`clinsent.data.DataNeed.note_entities`);
        otherwise S_all is gathered from the split sentences alone (the ``sentence_set_all`` rule)."""
        needs = (self.methods[m].method.data_need() for m in self.grid.plan_of)  # methods with a batch plan
        return self.note_sentences and any(need is not None and need.note_entities() for need in needs)

    @property
    def phi_scan(self) -> bool:
        return self.notes and bool(self.config["phi"]["scan"])

    @property
    def n_shards(self) -> int:
        return int(self.config["corpus"]["shards"])

    @property
    def shards(self) -> list[str]:
        return shard_names(self.n_shards)

    @property
    def shard_dir(self) -> str:
        """The shard count is part of the path, so changing it never mixes two layouts."""
        return f"{self.results}/corpus/shards{self.n_shards}"

    @property
    def ontology_download(self) -> str:
        release = self.config["ontology"]["release"]
        return f"{release['dir']}/efo-{release['version']}/efo.obo"

    @property
    def ontology_url(self) -> str:
        release = self.config["ontology"]["release"]
        return release_url(release["url"], release["version"])

    def model_specs(self) -> list[tuple[str, Any]]:
        """(config key, spec) of every model a run loads that is not one of its own trained runs:
        the base models and the methods' extra models (e.g. a frozen complementary model)."""
        return [
            *((f"base_models.{b}", spec) for b, spec in self.config["base_models"].items()),
            *(
                (f"methods.{m}", x)
                for m, e in self.methods.items()
                for x in e.method.extra_models()
                if x not in self.methods
            ),
        ]

    @property
    def hub_models(self) -> list[str]:
        """Models named by a Hugging Face id: the only downloads a run may make (:mod:`clinsent.offline`)."""
        return sorted({m for _, m in self.model_specs() if isinstance(m, str) and is_hub_id(m)})

    def wildcard_constraints(self) -> dict[str, str]:
        import re

        def one_of(names: Iterable[str]) -> str:
            names = list(names)
            return "|".join(map(re.escape, names)) if names else "x^"

        return {
            "method": one_of(self.methods),
            "base_model": one_of(self.config["base_models"]),
            "seed": r"\d+",
            "shard": r"\d{3}",
            "eval_set": one_of(self.eval_sets),
            "plan": one_of(self.plans),
            "source": one_of(self.training_data),
            "sentence_corpus": one_of(self.sentence_corpora),
            "finetune": one_of(self.finetune),
            "task": one_of(self.doc_tasks),
            "hub": one_of(hub_slug(m) for m in self.hub_models),
            "embedded_corpus": one_of(self.corpus_embeddings),
        }

    # -- paths ---------------------------------------------------------------------------------------------------
    def model_dir(self, method: str, base_model: str, seed: int | str) -> str:
        return f"{self.results}/models/{method}/{base_model}/seed{seed}"

    def embeddings(self, method: str, base_model: str, seed: int | str, eval_set: str) -> str:
        return f"{self.results}/embeddings/{method}/{base_model}/seed{seed}/{eval_set}.parquet"

    def sets_path(self) -> str:
        """The notes' sentence sets: with entities (``sentence_sets``), or S_all alone (``sentence_set_all``;
        the same sentences, ids and order)."""
        return self.entity_sets_path() if self.note_entities else self.s_all_path()

    def entity_sets_path(self) -> str:
        return f"{self.results}/sets/sentences.parquet"

    def s_all_path(self) -> str:
        return f"{self.results}/sets/s_all.parquet"

    def sets_counts_path(self) -> str:
        return f"{self.results}/sets/counts.json" if self.note_entities else f"{self.results}/sets/s_all.json"

    def linked_path(self) -> str:
        return f"{self.results}/sets/entities_linked.parquet"

    def corpus_stats_path(self, corpus: str) -> str:
        return f"{self.results}/sentence_corpora/{corpus}/stats.json"

    def documents_stats_path(self) -> str:
        return f"{self.results}/documents/stats.json"

    def data_paths(self) -> dict[str, str]:
        """Where the training data of the DAG lives (the notes pipeline's sets; sentence corpora under results)."""
        if not self.notes:
            return {"results": self.results, "sets": "", "linked": ""}
        return {
            "results": self.results,
            "sets": self.sets_path(),
            "linked": self.linked_path() if self.note_entities else "",
        }

    # -- user files ----------------------------------------------------------------------------------------------
    def external(self, paths: Iterable[str]) -> list[str]:
        """Input files the user supplies; with placeholders_ok, missing ones are left out (dry runs).
        Files under the results folder (e.g. a doc_task's table as an eval set's path) are the DAG's own."""
        return [
            p for p in paths if not self.placeholders_ok or os.path.exists(p) or str(p).startswith(f"{self.results}/")
        ]

    def external_file(self, path: str) -> str | list[str]:
        """One user-supplied input file, or none when it is a placeholder of a dry run."""
        return path if not self.placeholders_ok or os.path.exists(path) else []

    @property
    def notes_paths(self) -> list[str]:
        """The notes' file(s) (``notes.path``: a path or a list of them)."""
        return _as_paths((self.config.get("notes") or {}).get("path"))

    @property
    def hub_dir(self) -> str:
        return str(self.config.get("hub_dir") or "downloads/hub")

    def hub_folder(self, spec: str) -> str:
        """Where ``download_model`` fetches a Hugging Face id (:func:`clinsent.models.base.hub_slug`)."""
        return f"{self.hub_dir}/{hub_slug(spec)}"

    def model_inputs(self, specs: Iterable[str]) -> list[str]:
        """The files behind model specs that a job declares as inputs: a local folder, or the folder
        ``download_model`` fetches a Hugging Face id into (a DAG edge: the download, a local rule,
        runs on the submitting host before any job that loads the model; a folder under the results
        folder, a model this config trains: the benchmark's). Packaged models are not the DAG's."""
        return [
            self.hub_folder(s) if is_hub_id(s) else s
            for s in specs
            if not s.startswith(PACKAGE_PREFIX)
            and (is_hub_id(s) or os.path.exists(s) or s.startswith(f"{self.results}/"))
        ]

    def user_files(self) -> list[tuple[str, str]]:
        """(config key, path) of every input file the user supplies: the notes, the MedCAT pack and a
        local ontology (where the entity stage runs), each eval set's, training-data, sentence-corpus and
        document-task file. Files under the results folder are the DAG's own and are left out."""
        from clinsent.corpus.sentences import corpus_paths

        found = [("notes.path", p) for p in self.notes_paths]
        if self.note_entities:  # read only where the entity stage runs
            found += [
                (f"{section}.{key}", p)
                for section, key in (("ner", "model_pack"), ("ontology", "path"))
                for p in _as_paths((self.config.get(section) or {}).get(key))
            ]
        for name, e in self.eval_sets.items():
            entry = self.config["eval_sets"][name]
            for f in e.task.files():
                key = next((k for k, v in entry.items() if v == f or (isinstance(v, list) and f in v)), "path")
                found.append((f"eval_sets.{name}.{key}", f))
        for name, entry in (self.config.get("training_data") or {}).items():
            found += [(f"training_data.{name}.path", p) for p in entry_paths(entry)]
        for name, entry in (self.config.get("sentence_corpora") or {}).items():
            found += [(f"sentence_corpora.{name}.path", p) for p in corpus_paths(entry)]
        for name, entry in (self.config.get("doc_tasks") or {}).items():
            found += [(f"doc_tasks.{name}.{k}", entry[k]) for k in ("diagnoses", "mapping") if entry.get(k)]
        found += [
            (f"corpus_embeddings.{n}.input", str(e["input"]))
            for n, e in self.corpus_embeddings.items()
            if e["input"] != NOTES_INPUT
        ]
        return [(k, p) for k, p in found if not str(p).startswith(f"{self.results}/")]

    def eval_set_files(self, name: str) -> list[str]:
        return self.external(self.eval_sets[name].task.files())

    def doc_task_files(self, name: str) -> list[str]:
        """The user files an ICD-9 triage task reads besides the documents (diagnoses, mapping)."""
        entry = self.config["doc_tasks"][name]
        return self.external([p for p in (entry.get("diagnoses"), entry.get("mapping")) if p])

    def training_data_files(self, source: str) -> list[str]:
        return self.external(entry_paths(self.config["training_data"][source]))

    def ner_pack(self) -> str | list[str]:
        """The user's MedCAT pack (slimmed to the kept types if asked), or the one built from the ontology."""
        ner = self.config["ner"]
        if not ner["model_pack"]:
            return f"{self.results}/ner/medcat_pack"
        if ner["slim_pack"]:
            return f"{self.results}/ner/slim_pack"
        return self.external_file(ner["model_pack"])

    def ontology_file(self) -> str | list[str]:
        """The local ontology file, or the pinned release downloaded by ``download_ontology``."""
        path = self.config["ontology"]["path"]
        return self.external_file(path) if path else self.ontology_download

    # -- training ------------------------------------------------------------------------------------------------
    def curve_sets(self, method: str) -> list[str]:
        """The sets a train job evaluates: its selection set (if any) and those marked curve: true."""
        selection = self.methods[method].selection_set
        return ([selection] if selection else []) + [
            n for n, e in self.eval_sets.items() if e.curve and n != selection
        ]

    def start_model(self, method: str, base_model: str, seed: int | str) -> str:
        """The base model, or with ``init_from`` the trained model of that method (same base model and
        seed): an edge of the DAG, so retraining it reruns this job."""
        upstream = self.methods[method].init_from
        if upstream:
            return f"{self.model_dir(upstream, base_model, seed)}/model"
        return str(self.config["base_models"][base_model])

    def run_models(self, method: str, base_model: str, seed: int | str) -> dict[str, str]:
        """The trained runs the method's loss loads (a key of methods as an extra model, e.g.
        MixCSE's complementary model) -> their saved model (same base model and seed): DAG edges."""
        return {run: f"{self.model_dir(run, base_model, seed)}/model" for run in run_models(self.methods, method)}

    def train_inputs(self, method: str, base_model: str, seed: int | str) -> dict[str, Any]:
        """The curve sets, local model folders, trained runs, and the training data the method declares."""
        entry = self.methods[method]
        start = self.start_model(method, base_model, seed)
        runs = self.run_models(method, base_model, seed)
        inputs: dict[str, Any] = {
            "eval_files": [f for name in self.curve_sets(method) for f in self.eval_set_files(name)],
            "base_model": [start] if entry.init_from else self.model_inputs([start]),
            # e.g. MED-SE's definition_model; MixCSE's complementary model, a base model or a trained run
            "extra_models": self.model_inputs([m for m in entry.method.extra_models() if m not in runs])
            + list(runs.values()),
        }
        need = entry.method.data_need() if entry.method.trains else None
        if need is not None:
            inputs.update(need.inputs(self.data_paths(), int(seed)))
        return inputs

    def train_params(self, method: str, base_model: str, seed: int | str) -> dict[str, Any]:
        key = (method, base_model, str(seed))
        if key not in self._cache:  # each param of each train job asks (the dry run's listing again)
            entry = self.methods[method]
            runs = self.run_models(method, base_model, seed)  # only where there are some: no other job's params move
            self._cache[key] = {
                "method": {**entry.train_params(), **({"run_models": runs} if runs else {})},
                "base_model": self.start_model(method, base_model, seed),
                "eval_sets": {name: self.eval_sets[name].curve_params() for name in self.curve_sets(method)},
                "selection_set": entry.selection_set,
                "checkpoint_dir": f"{self.results}/checkpoints/{method}/{base_model}/seed{seed}",
            }
        return dict(self._cache[key])

    def eval_params(self, name: str) -> dict[str, Any]:
        """An eval set's params (what its embed, evaluate and stats jobs depend on)."""
        if name not in self._cache:
            self._cache[name] = self.eval_sets[name].params()
        return dict(self._cache[name])

    def plan_inputs(self, plan: str) -> dict[str, str]:
        """The sentences (and, for the notes' sets, the linked entities) a batch plan draws from."""
        if self.plans[plan]["source"] != "notes":
            return {"sets": sentence_corpus_path(self.results, self.plans[plan]["source"])}
        if not self.note_entities:
            return {"sets": self.sets_path()}
        return {"sets": self.sets_path(), "linked": self.linked_path()}

    def trained_jobs(self) -> list[Job]:
        return self.grid.jobs

    def finetune_jobs(self) -> list[tuple[str, str, int, str]]:
        """(method, base model, seed, entry): each trained run of an entry's methods whose base model
        the entry's test set evaluates."""
        return [
            (m, b, s, f)
            for m, b, s in self.trained_jobs()
            for f, e in self.finetune.items()
            if e.runs(m, b) and self.eval_sets[e.settings.test].evaluates(b)
        ]

    def cross_encoder_jobs(self) -> list[tuple[str, int, str]]:
        """(base model, seed, entry): the cross-encoder baseline for every base model of the grid."""
        bases = list(dict.fromkeys(b for _, b, _ in self.trained_jobs()))
        return [
            (b, s, f)
            for f, e in self.finetune.items()
            if e.settings.cross_encoder
            for b in bases
            if self.eval_sets[e.settings.test].evaluates(b) and e.on_base(b)
            for s in self.seeds
        ]

    def finetune_files(self, name: str) -> list[str]:
        s = self.finetune[name].settings
        return list(dict.fromkeys(f for role in (s.train, s.validation, s.test) for f in self.eval_set_files(role)))

    def finetune_params(self, name: str) -> dict[str, Any]:
        s = self.finetune[name].settings
        return {
            "settings": self.finetune[name].params(),
            "eval_sets": {role: self.eval_sets[getattr(s, role)].params() for role in ("train", "validation", "test")},
        }

    # -- scoring and the report ----------------------------------------------------------------------------------
    def zero_shot(self) -> list[tuple[str, str, int, str]]:
        """(method, base model, seed, eval set) of every evaluate job."""
        return [
            (m, b, s, e)
            for m, b, s in self.trained_jobs()
            for e, entry in self.eval_sets.items()
            if entry.evaluate and entry.evaluates(b)
        ]

    def evaluations(self) -> list[tuple[str, str, int, str]]:
        """Every scored row of the summary: zero-shot, fine-tuned and cross-encoder."""
        return [
            *self.zero_shot(),
            *self.finetune_jobs(),
            *[(CROSS_ENCODER, b, s, f) for b, s, f in self.cross_encoder_jobs()],
        ]

    def evaluation_paths(self) -> list[str]:
        r = self.results
        return (
            [f"{r}/metrics/{m}/{b}/seed{s}/{e}.json" for m, b, s, e in self.zero_shot()]
            + [f"{r}/finetune/{m}/{b}/seed{s}/{f}.json" for m, b, s, f in self.finetune_jobs()]
            + [f"{r}/cross_encoder/{b}/seed{s}/{f}.json" for b, s, f in self.cross_encoder_jobs()]
        )

    def scored_tasks(self) -> dict[str, Any]:
        """Eval set or fine-tune entry -> the task its rows are scored by."""
        return {n: e.task for n, e in self.eval_sets.items()} | {
            f: self.eval_sets[e.settings.test].task for f, e in self.finetune.items()
        }

    def run_tables(self) -> list[str]:
        """Tables whose kind also draws their runs' training curves, where one of those runs has a
        curve set to draw (a figure with nothing on it is not drawn)."""
        default = self.grid.default_base
        return [
            t
            for t, kind, entry in self.kinds()
            if isinstance(kind, TableKind)
            and kind.curves
            and self.has_curves(split_run(ref, default)[0] for _, ref in kind.runs(t, entry))
        ]

    def has_curves(self, methods: Iterable[str] | None = None) -> bool:
        """Whether a training curve has points to draw: some run (of ``methods``) evaluates a curve
        set (the selection set, or an eval set with ``curve: true``)."""
        chosen = set(self.methods) if methods is None else {m for m in methods if m in self.methods}
        return any(self.curve_sets(m) for m, _, _ in self.trained_jobs() if m in chosen)

    def first_seed_embeddings(self, ref: str, eval_set: str) -> str:
        """The embeddings of a run's first seed on an eval set (what example tables and t-SNE show)."""
        m, b = split_run(ref, self.grid.default_base)
        return self.embeddings(m, b, self.grid.seeds_of[m][0], eval_set)

    def kinds(self) -> list[tuple[str, Kind, dict[str, Any]]]:
        """(id, kind, entry) of every table, then every figure."""
        return kind_entries(self.config)

    def kind_extras(self) -> dict[str, dict[str, dict[str, Any]]]:
        """tables/figures -> id -> the files its kind reads (``inputs``) and what else it depends on
        (``params``): the ``extras`` param of paper_report."""
        out: dict[str, dict[str, dict[str, Any]]] = {"tables": {}, "figures": {}}
        for key, kind, entry in self.kinds():
            out[kind.section][key] = {"inputs": kind.inputs(key, entry, self), "params": kind.params(key, entry, self)}
        return out

    def kind_files(self) -> list[str]:
        """Every file the tables and figures read besides the summary and the curves."""
        files: list[str] = []
        for section in self.kind_extras().values():
            for extra in section.values():
                files += _paths(extra["inputs"])
        return list(dict.fromkeys(files))

    def scoring_methods(self) -> list[str]:
        return list(self.methods) + ([CROSS_ENCODER] if self.cross_encoder_jobs() else [])

    # -- job counts ----------------------------------------------------------------------------------------------
    def jobs(self) -> dict[str, int]:
        """How many jobs each rule gets in a run from scratch (:func:`clinsent.plan.jobs.job_counts`)."""
        from clinsent.plan.jobs import job_counts

        return job_counts(self)


def _as_paths(value: Any) -> list[str]:
    """A config value that is a path or a list of paths (None: none)."""
    return [value] if isinstance(value, str) else [str(v) for v in value or [] if isinstance(v, str)]


def _paths(value: Any) -> list[str]:
    """The file paths in a kind's inputs (a path, or a list or dict of them)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, Mapping):
        return [p for v in value.values() for p in _paths(v)]
    return [p for v in value for p in _paths(v)]
