"""The config view of a plan (:class:`RunView`): what one config holds, read through the
registries (its methods, eval sets, fine-tune entries and job grid), the shape of the run it asks
for (which stages run, the shards, the ontology, the models and wildcards) and the tables and
figures it declares. A :class:`clinsent.plan.layout.Plan` is composed of this view, its files
(:mod:`clinsent.plan.files`) and every job's inputs and params.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from clinsent import paths
from clinsent.config.sections import CorpusEmbeddingEntry, RunConfig
from clinsent.corpus.shards import shard_names
from clinsent.data.plan import SentencePlan
from clinsent.finetune.config import FinetuneEntry
from clinsent.methods.entries import MethodEntry
from clinsent.models.base import from_hub, hub_slug
from clinsent.ontology.download import release_url
from clinsent.plan.experiments import Grid
from clinsent.report.kinds.base import KindEntry
from clinsent.tasks.config import EvalSetEntry

Job = tuple[str, str, int]  # (method, base model, seed)


NOTES_INPUT = "notes"  # corpus_embeddings.<name>.input: the notes' split sentences


@dataclass
class RunView:
    """One config read through the registries, and the shape of its run: which stages run, the
    shards, the ontology, the models and wildcards, the job grid, the tables and figures."""

    config: RunConfig  # the config, typed at the door: what the registries received
    methods: dict[str, MethodEntry]
    eval_sets: dict[str, EvalSetEntry]
    finetune: dict[str, FinetuneEntry]
    grid: Grid
    # (id, kind, entry) of every table, then figure: each typed by its kind, defaults filled in
    reports: list[KindEntry] = field(default_factory=list)  # every table, then every figure
    derived: list[str] = field(default_factory=list)  # how steps were derived from epochs (shown in dry runs)

    @property
    def results(self) -> str:
        return self.config.results

    @property
    def tree(self) -> paths.Tree:
        """The results folder's files (:mod:`clinsent.paths`)."""
        return paths.Tree(self.results)

    @property
    def default_base(self) -> str:
        """The base model of a run cited without ``@base_model``."""
        return self.grid.default_base

    @property
    def seeds(self) -> list[int]:
        return list(self.config.seeds)

    @property
    def notes(self) -> bool:
        """The notes pipeline (ingest, and with sentence methods split -> NER -> sets) is in the DAG."""
        return self.config.notes is not None

    @property
    def sentence_corpora(self) -> list[str]:
        return list(self.config.sentence_corpora)

    @property
    def training_data(self) -> list[str]:
        return list(self.config.training_data)

    @property
    def doc_tasks(self) -> list[str]:
        return list(self.config.doc_tasks)

    @property
    def batch_plans(self) -> dict[str, SentencePlan]:
        """Batch plans (each its shape: :meth:`SentencePlan.shape`), shared by every method with
        the same corpus, strategy and size; the ``batch_plan`` rule's ``{plan}`` wildcard names one."""
        return self.grid.batch_plans

    @property
    def tables(self) -> dict[str, dict[str, Any]]:
        return {r.key: r.entry for r in self.reports if r.section == "tables"}

    @property
    def figures(self) -> dict[str, dict[str, Any]]:
        return {r.key: r.entry for r in self.reports if r.section == "figures"}

    @property
    def placeholders_ok(self) -> bool:
        """Dry runs of a config with placeholder paths leave missing external inputs out of the DAG."""
        return self.config.placeholders_ok

    @property
    def note_sentences(self) -> bool:
        """The notes' sentence pipeline runs when a method trains on its sets, a table shows them or
        a corpus embedding reads them."""
        return self.notes and (
            any(p.source == "notes" for p in self.batch_plans.values())
            or any(kind.note_sentences for _, kind, _ in self.kinds())
            or any(e.input == NOTES_INPUT for e in self.corpus_embeddings.values())
        )

    @property
    def corpus_embeddings(self) -> dict[str, CorpusEmbeddingEntry]:
        return dict(self.config.corpus_embeddings)

    @property
    def note_entities(self) -> bool:
        """The entity stage (ontology, MedCAT pack, NER, linking, S_ent / S_none and their statistics)
        runs only when a method's training data needs it (:meth:`clinsent.data.DataNeed.note_entities`);
        otherwise S_all is gathered from the split sentences alone (the ``sentence_set_all`` rule)."""
        needs = (self.methods[m].method.data_need() for m in self.grid.batch_plan_of)  # methods with a batch plan
        return self.note_sentences and any(need is not None and need.note_entities() for need in needs)

    @property
    def phi_scan(self) -> bool:
        return self.notes and self.config.phi.scan

    @property
    def n_shards(self) -> int:
        return self.config.corpus.shards

    @property
    def shards(self) -> list[str]:
        return shard_names(self.n_shards)

    @property
    def ontology_download(self) -> str:
        release = self.config.ontology.release
        return f"{release.dir}/efo-{release.version}/efo.obo"

    @property
    def ontology_url(self) -> str:
        """The release's URL as the download rule's params carry it: the config's, or, where
        ``url_env`` names a variable, that name alone as ``$NAME`` (read by the job when it runs)."""
        release = self.config.ontology.release
        if release.url_env:
            return f"${release.url_env}"
        return release_url(release.url, release.version)

    def model_specs(self) -> list[tuple[str, Any]]:
        """(config key, spec) of every model a run loads that is not one of its own trained runs:
        the base models and the methods' extra models (e.g. a frozen complementary model)."""
        return [
            *((f"base_models.{b}", spec) for b, spec in self.config.base_models.items()),
            *(
                (f"methods.{m}", x)
                for m, e in self.methods.items()
                for x in e.method.extra_models()
                if x not in self.methods
            ),
        ]

    @property
    def hub_models(self) -> list[str]:
        """Models named by a Hugging Face id: the only downloads a run may make (:mod:`clinsent.process.offline`)."""
        return sorted({m for _, m in self.model_specs() if isinstance(m, str) and from_hub(m)})

    def wildcard_constraints(self) -> dict[str, str]:
        import re

        def one_of(names: Iterable[str]) -> str:
            names = list(names)
            return "|".join(map(re.escape, names)) if names else "x^"

        return {
            "method": one_of(self.methods),
            "base_model": one_of(self.config.base_models),
            "seed": r"\d+",
            "shard": r"\d{3}",
            "part": r"\d{3}",  # a corpus embedding's shard
            "eval_set": one_of(self.eval_sets),
            "plan": one_of(self.batch_plans),  # a batch plan
            "source": one_of(self.training_data),
            "sentence_corpus": one_of(self.sentence_corpora),
            "finetune": one_of(self.finetune),
            "task": one_of(self.doc_tasks),
            "hub": one_of(hub_slug(m) for m in self.hub_models),
            "embedded_corpus": one_of(self.corpus_embeddings),
            "token_source": r"notes|definitions|(corpus|rows|documents)-[^/]+",
            "tokenizer": r"[^/]+",
            "token_length": r"\d+",
        }

    def trained_jobs(self) -> list[Job]:
        return self.grid.jobs

    def kinds(self) -> list[KindEntry]:
        """Every table, then every figure: (id, kind, entry), typed."""
        return self.reports
