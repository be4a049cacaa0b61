"""The workflow's plan as plain data: what a config asks the DAG to run, without Snakemake.

:func:`build_plan` reads a validated config once (methods, eval sets and fine-tune entries
through their registries, the job grid, the batch plans, the report's extra inputs) and the
:class:`Plan` answers every question the rules ask: a job's inputs and params, the jobs of each
rule, the targets of ``all``, the report's inputs. ``workflow/rules/common.smk`` builds one plan
and the rules call it through thin input functions, so the planning is tested here
(``tests/test_plan.py``) instead of only through dry runs, and parsing the Snakefile imports
neither torch nor transformers.

``python -m clinsent.plan --summary config/paper/medse.yaml`` prints the job counts by rule.

Tables and figures are planned through their kinds (:mod:`clinsent.report.kinds`): the runs
they cite, the files they read, their checks; nothing here names a kind.

Two checks still read a user's file while a config is read, as they did in ``common.smk``: a
sentence corpus's size when a method gives ``epochs`` over it (the steps, and so the batch plan's
name, depend on it) and the queries of a ``retrieval_examples`` table (checked against its eval
set's texts before any training). Both read only when the file exists.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clinsent.corpus.sentences import RESERVED
from clinsent.corpus.shards import shard_names
from clinsent.data.plan import sentence_corpus_path
from clinsent.data.readers import entry_paths
from clinsent.errors import InputError
from clinsent.experiments import Grid, split_run
from clinsent.finetune.config import CROSS_ENCODER, FinetuneEntry, resolve_finetunes
from clinsent.methods.config import MethodEntry, resolve_methods, run_models
from clinsent.models.base import PACKAGE_PREFIX, hub_slug, is_hub_id
from clinsent.ontology.download import release_url
from clinsent.registry import load_plugins
from clinsent.report.kinds.base import Kind, TableKind, check_entries
from clinsent.report.kinds.base import entries as kind_entries
from clinsent.tasks.config import EvalSetEntry, resolve_eval_sets

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

    def release_dir(self, method: str, base_model: str, seed: int | str) -> str:
        return f"{self.results}/release/{method}/{base_model}/seed{seed}"

    def release_metrics(self, method: str, base_model: str, seed: int | str) -> dict[str, str]:
        """Eval set -> the metrics file of one run's zero-shot evaluation (its release card's table)."""
        return {
            e: f"{self.results}/metrics/{m}/{b}/seed{s}/{e}.json"
            for m, b, s, e in self.zero_shot()
            if (m, b, str(s)) == (method, base_model, str(seed))
        }

    def release_dirs(self) -> list[str]:
        """A release copy of each run that trains (an untrained base model's is its own release)."""
        return [self.release_dir(m, b, s) for m, b, s in self.trained_jobs() if self.methods[m].method.trains]

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
        """How many jobs each rule gets in a run from scratch (what ``snakemake -n`` lists; tested
        against it for the paper configs)."""
        r = self.results
        trained = list(self.trained_jobs())
        counts: dict[str, int] = {"all": 1, "report": 1}
        if self.tables or self.figures:
            counts["paper_report"] = 1
        counts["train"] = len(trained)
        report_files = self.kind_files()
        embedded = {self.embeddings(m, b, s, self.eval_sets[e].embedded()) for m, b, s, e in self.zero_shot()}
        embedded |= {f for f in report_files if f.startswith(f"{r}/embeddings/")}
        counts["embed"] = len(embedded)
        counts["evaluate"] = len(self.zero_shot())
        counts["finetune"] = len(self.finetune_jobs())
        counts["cross_encoder"] = len(self.cross_encoder_jobs())
        needs = [self.train_inputs(m, b, s) for m, b, s in trained]
        counts["batch_plan"] = len({n["plan"] for n in needs if "plan" in n})
        files = {f for n in needs for v in n.values() for f in ([v] if isinstance(v, str) else v)}
        files |= {f for name in self.eval_sets for f in self.eval_set_files(name)}
        counts["training_rows"] = len({f for f in files if f.startswith(f"{r}/training_rows/")})
        models = [self.model_inputs([str(self.config["base_models"][b])]) for b, _, _ in self.cross_encoder_jobs()]
        counts["download_model"] = len(
            {f for f in [*files, *(f for m in models for f in m)] if f.startswith(f"{self.hub_dir}/")}
        )
        counts["sentence_corpus"] = len(self.sentence_corpora)
        counts["eval_set_stats"] = len({f for f in report_files if f.startswith(f"{r}/stats/eval_sets/")})
        counts["doc_task"] = len({f for f in files if f.startswith(f"{r}/doc_tasks/")})
        documents = counts["doc_task"] > 0 or any(f.startswith(f"{r}/documents/") for f in [*files, *report_files])
        counts["documents"] = int(documents)
        if self.note_sentences:
            counts.update(
                split_sentences=self.n_shards, corpus_manifest=1, sentence_set_all=int(not self.note_entities)
            )
        if self.note_entities:
            counts.update(ner=self.n_shards, sentence_sets=1, corpus_stats=1, duplicate_stats=1, ontology_terms=1)
            counts["download_ontology"] = int(not self.config["ontology"]["path"])
            counts["medcat_pack"] = int(not self.config["ner"]["model_pack"])
            counts["slim_pack"] = int(bool(self.config["ner"]["model_pack"] and self.config["ner"]["slim_pack"]))
        counts["ingest_notes"] = int(self.notes and (self.note_sentences or documents or self.phi_scan))
        counts["phi_sample"] = counts["phi_scan"] = int(self.phi_scan)
        counts["corpus_embed"] = len(self.corpus_embeddings)
        counts["release"] = len(self.release_dirs())
        if self.config.get("models"):
            from clinsent.benchmark.plan import benchmark_models

            counts["mteb_results"] = len(benchmark_models(self))
        return {k: v for k, v in sorted(counts.items()) if v}


def check_formats(config: dict[str, Any]) -> None:
    """Each input's format is a registered reader's name (the eval sets' are their tasks' knobs)."""
    from clinsent.corpus.notes import NOTE_READERS
    from clinsent.corpus.sentences import SENTENCE_FORMATS, corpus_format, corpus_paths
    from clinsent.data.training_rows import READERS

    if config.get("notes"):
        NOTE_READERS.get(str(config["notes"].get("format", "noteevents_csv")), where="config: notes.format")
    for name, entry in (config.get("sentence_corpora") or {}).items():
        for path in corpus_paths(entry):
            SENTENCE_FORMATS.get(corpus_format(path, entry), where=f"config: sentence_corpora.{name}.format")
    for name, entry in (config.get("training_data") or {}).items():
        READERS.get(str(entry["format"]), where=f"config: training_data.{name}.format")


def build_plan(config: dict[str, Any]) -> Plan:
    """Read a validated config through the registries; a config error is an :class:`InputError`
    (or a ``ValueError`` from the table and figure references) naming the key and the fix."""
    config.setdefault("notes", {})
    check_names(config)  # entry names become path parts: ../phi, spaces, : and / are refused
    if config["selection_set"] is not None and config["selection_set"] not in config["eval_sets"]:
        raise InputError(
            "config: selection_set",
            f"{config['selection_set']!r} is not a key of eval_sets {list(config['eval_sets'])}",
            "name one of the eval sets, or null to keep each run's last step",
        )
    for name in config.get("sentence_corpora") or {}:
        if name in RESERVED:
            raise InputError(
                f"config: sentence_corpora.{name}",
                "the name is taken by the notes pipeline's sets",
                "rename the corpus",
            )
    # `plugins` (Python files or modules) may register more methods and tasks; every job script imports them too
    load_plugins(config.get("plugins"))
    check_formats(config)
    check_entries(config)  # each table and figure against its kind's keys, their defaults filled in
    methods = resolve_methods(config)
    eval_sets = resolve_eval_sets(config)
    finetune = resolve_finetunes(config, eval_sets)
    grid = Grid.from_config(config, methods)
    if not config.get("notes"):
        for m, key in grid.plan_of.items():
            if grid.plans[key]["source"] == "notes":
                raise InputError(
                    f"config: methods.{m}",
                    "trains on the notes pipeline's sets (sentences: notes), and the config has no `notes`",
                    "add a `notes` block, or set `sentences` to a key of sentence_corpora",
                )
    plan = Plan(config, methods, eval_sets, finetune, grid, [e.derived for e in methods.values() if e.derived])
    check_model_folders(plan)
    check_corpus_embeddings(plan)
    check_user_files(plan)
    check_eval_headers(plan)
    check_doc_task_categories(config)
    for key, kind, entry in plan.kinds():
        kind.check(key, entry, plan)
    check_shown_texts(plan)
    return plan


def check_model_folders(plan: Plan) -> None:
    """A model entry written as a path (:func:`clinsent.models.base.looks_like_path`) must be an
    existing folder: it is never taken for a Hugging Face id, so a typo stops the dry run here
    rather than a job (or a download attempt) later. ``placeholders_ok`` lets it be missing. A
    Hugging Face id must fit the Hub's grammar (:func:`clinsent.names.check_hub_id`); a local
    folder must hold a model (:func:`clinsent.models.saved.check_model_folder`), read as the jobs
    will (its own pooling too, where a method asks for ``pooling: model``), the error naming the
    config key of the model (``models.<name>`` for a benchmark model)."""
    from clinsent.benchmark.models import METHOD_PREFIX
    from clinsent.models.base import looks_like_path, resolve_model
    from clinsent.models.saved import check_model_folder
    from clinsent.names import check_hub_id

    benchmark = plan.config.get("models") or {}
    # `pooling: model` reads the folder's own pooling: a benchmark model's own entry says whether it
    # asks for it; any other base model is read with every method of the grid
    own_for_all = any(
        e.method.settings.pooling == "model" for n, e in plan.methods.items() if not n.startswith(METHOD_PREFIX)
    )

    def own_pooling(name: str) -> bool:
        entry = benchmark.get(name)
        if isinstance(entry, Mapping):
            return str(entry.get("pooling") or "model") == "model"
        return own_for_all or isinstance(entry, str)

    for where, spec in plan.model_specs():
        if not isinstance(spec, str):
            continue
        section, _, name = where.partition(".")
        key = f"models.{name}" if section == "base_models" and name in benchmark else where
        if (
            not spec.startswith(PACKAGE_PREFIX)
            and looks_like_path(spec)
            and not os.path.isdir(os.path.expanduser(spec))
        ):
            if plan.placeholders_ok:
                continue
            raise InputError(
                f"config: {key}",
                f"{spec!r} is written as a path, and no such folder exists (from {os.getcwd()})",
                "correct the path (relative paths are from the workflow's "
                "directory); a Hugging Face id is `name` or `owner/name`",
            )
        if is_hub_id(spec):
            check_hub_id(spec, f"config: {key}")
            continue
        folder = resolve_model(spec)
        if os.path.isdir(folder):
            check_model_folder(folder, f"config: {key}", section == "base_models" and own_pooling(name))


def check_names(config: Mapping[str, Any]) -> None:
    from clinsent.names import check_names as check

    check(config)


def check_corpus_embeddings(plan: Plan) -> None:
    """Each corpus embedding names a trained run of this config (method@base_model, a seed among
    ``seeds``), and ``notes`` only where the config reads notes."""
    trained = set(plan.trained_jobs())
    for name, entry in plan.corpus_embeddings.items():
        where = f"config: corpus_embeddings.{name}"
        method, _, base = str(entry["run"]).partition("@")
        if method not in plan.methods or base not in plan.config["base_models"]:
            raise InputError(
                f"{where}.run",
                f"{entry['run']!r} is not method@base_model of this config",
                f"write a key of methods, @, a key of base_models (e.g. {next(iter(plan.methods), 'm')}@"
                f"{next(iter(plan.config['base_models']), 'b')})",
            )
        if plan.corpus_run(name) not in trained:
            raise InputError(
                f"{where}.seed",
                f"no run of {entry['run']} with seed {plan.corpus_run(name)[2]} is in "
                "this config (its seeds, or the base model's evaluation)",
                f"use one of seeds {plan.seeds}",
            )
        if entry["input"] == NOTES_INPUT and not plan.notes:
            raise InputError(
                f"{where}.input", "notes, and the config has no `notes`", "add a `notes` block, or give a file"
            )


def check_user_files(plan: Plan) -> None:
    """Every input file the config names exists, or the dry run stops naming each missing one
    with the key to set (before, Snakemake said "Missing input files" with paths only).
    ``placeholders_ok`` leaves missing files out of the DAG instead."""
    if plan.placeholders_ok:
        return
    missing = [(k, p) for k, p in plan.user_files() if not os.path.exists(os.path.expanduser(p))]
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


def check_eval_headers(plan: Plan) -> None:
    """Each eval set's header lines (e.g. a split asked of a file without a split column), read
    while the config is read: a header line only, not a row, so nothing of the data is shown or
    held. Files a job writes, and files missing under ``placeholders_ok``, are checked in their job."""
    for entry in plan.eval_sets.values():
        files = entry.task.files()
        if all(os.path.exists(f) and not str(f).startswith(f"{plan.results}/") for f in files):
            entry.task.check_header()


def check_doc_task_categories(config: Mapping[str, Any]) -> None:
    """A document task's category that ``notes.categories`` leaves out of the ingest would be an
    empty class, silently dropped: stop naming its index (compared without surrounding spaces,
    as the task compares them). Categories that the notes lack are the jobs' check
    (:func:`clinsent.registry.check_values`): the ingest for ``notes.categories``, each
    ``doc_task`` job for its own."""
    ingested = (config.get("notes") or {}).get("categories")
    if not ingested:
        return
    kept = {str(c).strip() for c in ingested}
    for name, entry in (config.get("doc_tasks") or {}).items():
        by_category = entry.get("label", "category") == "category"
        key = "categories" if by_category else "note_category"
        wanted = (
            list(entry.get("categories") or []) if by_category else [entry.get("note_category", "Discharge summary")]
        )
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
        name: next((f for f in e.task.files() if derived_from_notes(f, plan.results, plan.notes_paths)), None)
        for name, e in plan.eval_sets.items()
    }
    for name, e in plan.eval_sets.items():
        if e.text_shareable and derived[name]:
            raise InputError(
                f"config: eval_sets.{name}.text_shareable",
                f"the set is read from {derived[name]}, which is made from the notes: its texts are never shared",
                "drop text_shareable",
            )
    for key, kind, entry in plan.kinds():
        for where, name in kind.shown_texts(key, entry):
            if derived.get(name):
                raise InputError(
                    f"config: {where}",
                    f"shows texts of eval set {name!r}, read from {derived[name]}, "
                    "which is made from the notes: note text never goes into a shared table",
                    "show an eval set of public texts, or drop the entry",
                )
            if name in plan.eval_sets and not plan.eval_sets[name].text_shareable:
                raise InputError(
                    f"config: {where}",
                    f"shows texts of eval set {name!r}, which is not marked text_shareable",
                    f"set eval_sets.{name}.text_shareable: true if its texts are "
                    "public (never for credentialed data such as MedNLI or ClinicalSTS), or drop the entry",
                )


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


def _load_config(path: str, overrides: Mapping[str, Any]) -> dict[str, Any]:
    """A config file as the Snakefile sees it: validated against the schema, defaults filled in."""
    from clinsent.safe_yaml import load_mapping

    return prepare_config({**load_mapping(path), **overrides})


def prepare_config(config: dict[str, Any], root: Path | None = None) -> dict[str, Any]:
    """A config as the Snakefile reads it (its base underneath, optional sets whose files are
    missing left out, the benchmark's models expanded), validated against the schema with the
    defaults filled in; a schema error is a ``ValueError`` of one line (the key, the fix)."""
    from snakemake.exceptions import WorkflowError
    from snakemake.utils import validate

    from clinsent.benchmark.models import expand as expand_models
    from clinsent.benchmark.models import leave_out_missing
    from clinsent.overlay import fill_results, resolve_base
    from clinsent.smk import schema_message

    fill_results(resolve_base(config, root=root))
    leave_out_missing(config)
    expand_models(config)
    try:
        validate(config, str(Path(__file__).resolve().parents[2] / "config" / "schema.yaml"))
    except WorkflowError as exc:
        raise ValueError(schema_message(exc)) from None
    return config


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m clinsent.plan", description="Plan a config without Snakemake.")
    parser.add_argument("config", help="a config file (e.g. config/paper/medse.yaml)")
    parser.add_argument("--summary", action="store_true", help="print the job counts by rule (the default)")
    parser.add_argument(
        "--placeholders-ok",
        action="store_true",
        help="leave missing user files out, as `--config placeholders_ok=true` does",
    )
    args = parser.parse_args(argv)
    try:
        plan = build_plan(_load_config(args.config, {"placeholders_ok": True} if args.placeholders_ok else {}))
    except (InputError, ValueError) as exc:
        print(exc, file=sys.stderr)
        return 1
    counts = plan.jobs()
    width = max(map(len, counts))
    for rule, n in counts.items():
        print(f"{rule:<{width}}  {n:>6}")
    print(f"{'total':<{width}}  {sum(counts.values()):>6}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
