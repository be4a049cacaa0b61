"""A run's plan (:class:`Plan`), composed of three parts: what the config asks
(:class:`clinsent.plan.run.RunView`, ``plan.run``), where its files live
(:class:`clinsent.plan.files.RunFiles`, ``plan.files``) and, here, every rule's inputs and
params, the job grid, the scored rows, the report's tables and figures and the release copies;
what the rules' declarations (:mod:`clinsent.plan.rules`) and params functions ask. Tables and
figures see it through :class:`clinsent.plan.view.KindView` (a
:class:`clinsent.report.kinds.base.PlanView`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from clinsent import paths
from clinsent.config.declare import to_params
from clinsent.config.sections import Notes
from clinsent.data.plan import sentence_corpus_path
from clinsent.data.token_sources import TokenJob, layout_of
from clinsent.data.tokens import TokenFile
from clinsent.evaluation import length as eval_length
from clinsent.finetune.config import CROSS_ENCODER
from clinsent.methods.entries import run_models
from clinsent.plan.files import RunFiles
from clinsent.plan.run import NOTES_INPUT, Job, RunView
from clinsent.plan.view import KindView
from clinsent.report.captions import RunFacts
from clinsent.report.kinds.base import PlanView, TableKind
from clinsent.report.paired import default_reference
from clinsent.run_ref import split_run

__all__ = ["NOTES_INPUT", "Job", "Plan"]


class Plan:
    """Everything the rules need from one config (see the module docstring)."""

    def __init__(self, run: RunView) -> None:
        self.run = run
        self.files = RunFiles(run)
        self.view: PlanView = KindView(run, self.files)
        self._params: dict[Any, dict[str, Any]] = {}  # each job's params, made once (every rule asks often)
        self._tokens: dict[str, TokenFile] | None = None  # every token file of the grid, by path

    def release_dir(self) -> str:
        """The release copies of the run's trained models (one ``release`` job writes them all)."""
        return self.run.tree.file(paths.RELEASE)

    def release_runs(self) -> list[dict[str, Any]]:
        """Each run that trains (an untrained base model's release is its own): its folder under the
        release copy, its model, record and curve, its zero-shot metrics files with their headlines,
        and its base model entry (the card names it)."""
        runs = []
        for m, b, s in self.run.trained_jobs():
            if not self.run.methods[m].method.trains:
                continue
            metrics = {
                e: self.files.metrics(m, b, s, e) for mm, bb, ss, e in self.zero_shot() if (mm, bb, ss) == (m, b, s)
            }
            ref = self.reference()
            baseline = (
                {
                    e: self.files.metrics(ref, b, self.run.grid.seeds_of[ref][0], e)
                    for mm, bb, ss, e in self.zero_shot()
                    if (mm, bb, ss) == (ref, b, self.run.grid.seeds_of[ref][0]) and e in metrics
                }
                if ref is not None and ref != m and ref in self.run.grid.seeds_of
                else {}
            )
            runs.append(
                {
                    "folder": paths.fill(paths.RELEASE_RUN, method=m, base_model=b, seed=s),
                    "model": self.files.run_file(paths.MODEL, m, b, s),
                    "selection": self.files.run_file(paths.SELECTION, m, b, s),
                    "curve": self.files.run_file(paths.CURVE, m, b, s),
                    "metrics": metrics,
                    "base_model": self.run.config.base_models[b],
                    "headlines": {e: self.run.eval_sets[e].task.headline for e in metrics},
                    "reference": ref if baseline else None,  # the card's baseline column
                    "baseline": baseline,
                }
            )
        return runs

    def reference(self) -> str | None:
        """The method every row is compared with (:func:`clinsent.report.paired.default_reference`)."""
        return default_reference(
            self.scoring_methods(),
            {m for m, e in self.run.methods.items() if not e.method.trains},
            self.run.config.report.reference,
        )

    def notes_facts(self, method: str) -> dict[str, Any] | None:
        """What a model card says of the notes a method trains on (config key, format, the length
        filter): None for a method that does not draw from the notes."""
        entry = self.run.methods[method]
        need = entry.method.data_need() if entry.method.trains else None
        if getattr(need, "source", None) != "notes":
            return None
        notes = self.run.config.notes
        return {
            "key": "notes",
            "format": notes.format if notes is not None else Notes(path="").format,
            "min_words": self.run.config.corpus.min_words,
        }

    def release_dirs(self) -> list[str]:
        """The release folder, where a run trains (the targets of ``all`` and the PHI scan)."""
        return [self.release_dir()] if self.release_runs() else []

    def curve_sets(self, method: str) -> list[str]:
        """The sets a train job evaluates: its selection set (if any) and those marked curve: true."""
        selection = self.run.methods[method].selection_set
        return ([selection] if selection else []) + [
            n for n, e in self.run.eval_sets.items() if e.curve and n != selection
        ]

    def start_model(self, method: str, base_model: str, seed: int | str) -> str:
        """The base model, or with ``init_from`` the trained model of that method (same base model and
        seed): an edge of the DAG, so retraining it reruns this job."""
        upstream = self.run.methods[method].init_from
        if upstream:
            return self.files.run_file(paths.MODEL, upstream, base_model, seed)
        return self.run.config.base_models[base_model]

    def run_models(self, method: str, base_model: str, seed: int | str) -> dict[str, str]:
        """The trained runs the method's loss loads (a key of methods as an extra model, e.g.
        MixCSE's complementary model) -> their saved model (same base model and seed): DAG edges."""
        return {
            run: self.files.run_file(paths.MODEL, run, base_model, seed)
            for run in run_models(self.run.methods, method)
        }

    def train_inputs(self, method: str, base_model: str, seed: int | str) -> dict[str, Any]:
        """The curve sets, local model folders, trained runs, and the training data the method declares."""
        entry = self.run.methods[method]
        start = self.start_model(method, base_model, seed)
        runs = self.run_models(method, base_model, seed)
        inputs: dict[str, Any] = {
            "eval_files": [f for name in self.curve_sets(method) for f in self.files.eval_set_files(name)],
            "base_model": [start] if entry.init_from else self.files.model_inputs([start]),
            # e.g. MED-SE's definition_model; MixCSE's complementary model, a base model or a trained run
            "extra_models": self.files.model_inputs([m for m in entry.method.extra_models() if m not in runs])
            + list(runs.values()),
        }
        need = entry.method.data_need() if entry.method.trains else None
        if need is not None:
            inputs.update(need.inputs(self.data_paths(base_model), int(seed)))
        return inputs

    def data_paths(self, base_model: str) -> dict[str, str]:
        """Where a train job's data lives, and its tokenizer's name in the token files (its base
        model's key: a run started from another run's model keeps its base model's tokenizer)."""
        return {**self.files.data_paths(), "tokenizer": base_model}

    def token_files(self) -> dict[str, TokenFile]:
        """Every token file a train job of the grid reads, by path (:mod:`clinsent.data.tokens`)."""
        if self._tokens is None:
            found: dict[str, TokenFile] = {}
            for m, b, _ in self.run.trained_jobs():
                method = self.run.methods[m].method
                need = method.data_need() if method.trains else None
                if need is not None:
                    for f in need.token_files(self.data_paths(b)).values():
                        found[f.path(self.run.results)] = f
            self._tokens = found
        return dict(self._tokens)

    def token_file(self, source: str, tokenizer: str, length: int | str) -> TokenFile:
        path = paths.Tree(self.run.results).file(
            paths.TOKENS, token_source=source, tokenizer=tokenizer, token_length=length
        )
        return self.token_files()[path]

    def tokenizer_model(self, tokenizer: str) -> str:
        """The model whose tokenizer a token file's name means: a base model's key, or the hash of
        another model (MED-SE's ``definition_model``: :func:`clinsent.paths.tokenizer_key`)."""
        if tokenizer in self.run.config.base_models:
            return str(self.run.config.base_models[tokenizer])
        for entry in self.run.methods.values():
            spec = getattr(entry.method.settings, "definition_model", None)
            if spec and paths.tokenizer_key(spec) == tokenizer:
                return str(spec)
        raise KeyError(f"no model of the config has the tokenizer name {tokenizer!r}")

    def token_inputs(self, source: str, tokenizer: str) -> dict[str, Any]:
        """A token file's source rows (and, for the notes' sentences where the run links entities,
        the linked entities, whose spans it maps) and its tokenizer's model folder."""
        layout, name = layout_of(source), source.split("-", 1)[-1]
        where = {
            "definitions": lambda: self.files.linked_path(),
            "documents": lambda: self.run.tree.file(paths.DOCUMENTS, partition=name),
            "rows": lambda: self.run.tree.file(paths.TRAINING_ROWS, source=name),
            "sentences": lambda: (
                self.files.sets_path() if source == "notes" else sentence_corpus_path(self.run.results, name)
            ),
        }
        out: dict[str, Any] = {"source": where[layout]()}
        if source == "notes" and self.run.note_entities:
            out["linked"] = self.files.linked_path()
        out["model"] = self.files.model_inputs([self.tokenizer_model(tokenizer)])
        return out

    def token_params(self, source: str, tokenizer: str, length: int | str) -> dict[str, Any]:
        """What a token file is made of: its layout, its tokenizer's model, its length (its source
        and the linked entities are its inputs)."""
        f = self.token_file(source, tokenizer, length)
        return to_params(TokenJob(layout_of(source), self.tokenizer_model(tokenizer), f.max_length))

    def train_resources(self) -> dict[str, Any]:
        """The train rule's resources: on one node ``gpu`` = ``training.processes`` (Slurm's
        ``--gpus=N``; the local slots take N devices), across nodes ``gres: gpu:N`` per node with
        ``nodes``, ``tasks_per_node`` and ``mpi: srun`` (the Slurm executor plugin's own resources;
        no ``gpu`` beside them, so the plugin does not ask for the devices twice)."""
        t = self.run.config.training

        def processes(wildcards: Any) -> int:  # an untrained method's job (a wrap and a save) runs alone
            return t.processes if self.run.methods[wildcards.method].method.trains else 1

        def memory(wildcards: Any) -> int:  # each process holds a model, its optimiser and its batches
            return 8000 * processes(wildcards)

        if t.nodes == 1:
            return {"gpu": processes, "mem_mb": memory}
        return {
            "gres": lambda wc: f"gpu:{processes(wc)}",
            "nodes": lambda wc: t.nodes if processes(wc) > 1 else 1,
            "tasks_per_node": processes,
            "mpi": "srun",
            "mem_mb": memory,
        }

    def train_params(self, method: str, base_model: str, seed: int | str) -> dict[str, Any]:
        key = (method, base_model, str(seed))
        if key not in self._params:  # each param of each train job asks (the dry run's listing again)
            entry = self.run.methods[method]
            runs = self.run_models(method, base_model, seed)  # only where there are some: no other job's params move
            self._params[key] = {
                "method": {**entry.train_params(), **({"run_models": runs} if runs else {})},
                "base_model": self.start_model(method, base_model, seed),
                "eval_sets": {name: self.run.eval_sets[name].curve_params() for name in self.curve_sets(method)},
                "selection_set": entry.selection_set,
                "eval_max_length": eval_length.configured(self.run.config),  # the evaluation length (saved)
                **({"notes": facts} if (facts := self.notes_facts(method)) else {}),  # the model card's words
                "checkpoint_dir": self.files.run_file(paths.CHECKPOINTS, method, base_model, seed),
            }
        return dict(self._params[key])

    def eval_params(self, name: str) -> dict[str, Any]:
        """An eval set's params (what its embed, evaluate and stats jobs depend on)."""
        if name not in self._params:
            self._params[name] = self.run.eval_sets[name].params()
        return dict(self._params[name])

    def batch_plan_inputs(self, plan: str) -> dict[str, str]:
        """The sentences (and, for the notes' sets, the linked entities) a batch plan draws from."""
        source = self.run.batch_plans[plan].source
        if source != "notes":
            return {"sets": sentence_corpus_path(self.run.results, source)}
        if not self.run.note_entities:
            return {"sets": self.files.sets_path()}
        return {"sets": self.files.sets_path(), "linked": self.files.linked_path()}

    def finetune_jobs(self) -> list[tuple[str, str, int, str]]:
        """(method, base model, seed, entry): each trained run of an entry's methods whose base model
        the entry's test set evaluates."""
        return [
            (m, b, s, f)
            for m, b, s in self.run.trained_jobs()
            for f, e in self.run.finetune.items()
            if e.runs(m, b) and self.run.eval_sets[e.settings.test].evaluates(b)
        ]

    def cross_encoder_jobs(self) -> list[tuple[str, int, str]]:
        """(base model, seed, entry): the cross-encoder baseline for every base model of the grid."""
        bases = list(dict.fromkeys(b for _, b, _ in self.run.trained_jobs()))
        return [
            (b, s, f)
            for f, e in self.run.finetune.items()
            if e.settings.cross_encoder
            for b in bases
            if self.run.eval_sets[e.settings.test].evaluates(b) and e.on_base(b)
            for s in self.run.seeds
        ]

    def finetune_files(self, name: str) -> list[str]:
        s = self.run.finetune[name].settings
        return list(
            dict.fromkeys(f for role in (s.train, s.validation, s.test) for f in self.files.eval_set_files(role))
        )

    def finetune_params(self, name: str) -> dict[str, Any]:
        s = self.run.finetune[name].settings
        return {
            "settings": self.run.finetune[name].params(),
            "eval_sets": {
                role: self.run.eval_sets[getattr(s, role)].params() for role in ("train", "validation", "test")
            },
        }

    def zero_shot(self) -> list[tuple[str, str, int, str]]:
        """(method, base model, seed, eval set) of every evaluate job."""
        return [
            (m, b, s, e)
            for m, b, s in self.run.trained_jobs()
            for e, entry in self.run.eval_sets.items()
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
        t = self.run.tree
        return (
            [self.files.metrics(m, b, s, e) for m, b, s, e in self.zero_shot()]
            + [self.files.finetune_metrics(m, b, s, f) for m, b, s, f in self.finetune_jobs()]
            + [t.file(paths.CROSS_ENCODER, base_model=b, seed=s, finetune=f) for b, s, f in self.cross_encoder_jobs()]
        )

    def scored_tasks(self) -> dict[str, Any]:
        """Eval set or fine-tune entry -> the task its rows are scored by."""
        return {n: e.task for n, e in self.run.eval_sets.items()} | {
            f: self.run.eval_sets[e.settings.test].task for f, e in self.run.finetune.items()
        }

    def run_facts(self) -> RunFacts:
        """What this run does, as every caption and table note states it (:mod:`clinsent.report.captions`)."""
        from clinsent.report.captions import has_paper_numbers

        run, methods = self.run, self.run.methods
        trains = [m for m, e in methods.items() if e.method.trains]
        stages = (
            ["the notes split into sentences (ScispaCy)", "S_all (the length filter)"] if run.note_sentences else []
        )
        if run.note_entities:
            stages += ["MedCAT NER (T047, T048)", "ontology definitions", "S_ent and S_none"]
        return RunFacts(
            seeds=max((len(e.seeds) for e in methods.values()), default=1),
            reference=self.reference(),
            selection={m: methods[m].selection_set for m in trains},
            reported=list(self.scored_tasks()),
            curve_sets=list(dict.fromkeys(n for m in trains for n in self.curve_sets(m))),
            corpus_stages=[*stages, *(f"sentence corpus {c}" for c in run.sentence_corpora)],
            paper_tables={t: has_paper_numbers(e) for t, e in run.tables.items()},
            eval_length=eval_length.configured(run.config),
        )

    def report_eval_sets(self) -> dict[str, dict[str, Any]]:
        """The report job's view of every scored set: its metrics, headline metric, the metrics
        it does not difference, and its files' names (the note under the table names them)."""
        import os

        return {
            n: {
                "metrics": list(t.metrics),
                "headline": t.headline,
                "not_differenced": list(t.not_differenced),
                "files": [os.path.basename(str(f)) for f in t.files()],
            }
            for n, t in self.scored_tasks().items()
        }

    def run_tables(self) -> list[str]:
        """Tables whose kind also draws their runs' training curves, where one of those runs has a
        curve set to draw (a figure with nothing on it is not drawn)."""
        default = self.run.grid.default_base
        return [
            t
            for t, kind, entry in self.run.kinds()
            if isinstance(kind, TableKind)
            and kind.curves
            and self.has_curves(split_run(ref, default)[0] for _, ref in kind.runs(t, entry))
        ]

    def has_curves(self, methods: Iterable[str] | None = None) -> bool:
        """Whether a training curve has points to draw: some run (of ``methods``) evaluates a curve
        set (the selection set, or an eval set with ``curve: true``)."""
        chosen = set(self.run.methods) if methods is None else {m for m in methods if m in self.run.methods}
        return any(self.curve_sets(m) for m, _, _ in self.run.trained_jobs() if m in chosen)

    def kind_extras(self) -> dict[str, dict[str, dict[str, Any]]]:
        """tables/figures -> id -> the files its kind reads (``inputs``) and what else it depends on
        (``params``): the ``extras`` param of paper_report."""
        out: dict[str, dict[str, dict[str, Any]]] = {"tables": {}, "figures": {}}
        for key, kind, entry in self.run.kinds():
            out[kind.section][key] = {
                "inputs": kind.inputs(key, entry, self.view),
                "params": kind.params(key, entry, self.view),
            }
        return out

    def kind_files(self) -> list[str]:
        """Every file the tables and figures read besides the summary and the curves."""
        files: list[str] = []
        for section in self.kind_extras().values():
            for extra in section.values():
                files += _paths(extra["inputs"])
        return list(dict.fromkeys(files))

    def scoring_methods(self) -> list[str]:
        return list(self.run.methods) + ([CROSS_ENCODER] if self.cross_encoder_jobs() else [])


def _paths(value: Any) -> list[str]:
    """The file paths in a kind's inputs (a path, or a list or dict of them)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, Mapping):
        return [p for v in value.values() for p in _paths(v)]
    return [p for v in value for p in _paths(v)]
