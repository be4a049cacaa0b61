"""The DAG's rules as the plan declares them: each rule's outputs (the path grammar's patterns,
:mod:`clinsent.paths`) and its inputs (a function of the job's wildcards), written once.

The Snakefile's rules take both from here (``IN`` and ``OUT`` in ``workflow/rules/common.smk``):
what a rule adds is how it runs (params, log, benchmark, resources, its script) and how
``snakemake --report`` shows an output. :func:`clinsent.plan.jobs.jobs` walks the same
declarations from ``all``'s inputs, as Snakemake builds its DAG, so the plan's jobs and job
counts are the DAG's without a table of rule names (``tests/plan/test_plan.py`` checks them
against Snakemake's own DAG for every config).

A rule's inputs (and outputs) are a list (positional) or a mapping (named): a name holds one
file (a ``str``) or a list of them, as the rule's script reads it. An output that is a folder is
a :class:`Folder`, one removed once its readers are done a :class:`Scratch`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from clinsent import paths

if TYPE_CHECKING:
    from clinsent.plan.layout import Plan

Files = str | list[str]
Declared = dict[str, Files] | list[str]  # named, or positional
Wildcards = Mapping[str, str]


class Folder(str):
    """An output that is a folder (Snakemake's ``directory()``)."""

    __slots__ = ()


class Scratch(str):
    """An output removed once every job that reads it is done (Snakemake's ``temp()``)."""

    __slots__ = ()


@dataclass(frozen=True)
class Rule:
    """One rule of the DAG: its outputs' patterns and its inputs for a job's wildcards."""

    name: str
    outputs: Callable[[Plan], Declared]
    inputs: Callable[[Plan, Wildcards], Declared]


RULES: dict[str, Rule] = {}


def _rule(
    outputs: Callable[[Plan], Declared], name: str = ""
) -> Callable[[Callable[[Plan, Wildcards], Declared]], Any]:
    """Declare a rule: its outputs, and (the decorated function) its inputs; named as the function."""

    def register(inputs: Callable[[Plan, Wildcards], Declared]) -> Callable[[Plan, Wildcards], Declared]:
        RULES[name or inputs.__name__] = Rule(name or inputs.__name__, outputs, inputs)
        return inputs

    return register


def files_of(declared: Declared) -> list[str]:
    """Every file of a rule's inputs or outputs, in order."""
    items = declared.values() if isinstance(declared, dict) else declared
    return [f for item in items for f in ([item] if isinstance(item, str) else item)]


def _listed(path: str | list[str]) -> list[str]:
    """A file, or none (a dry run's missing placeholder), as a list."""
    return [path] if isinstance(path, str) else list(path)


# -- the notes: shards, sentences, entities, sets --------------------------------------------------


def _shard(p: Plan, template: str, shard: str) -> str:
    return p.run.tree.file(template, n_shards=p.run.n_shards, shard=shard)


def _shards(p: Plan, template: str) -> list[str]:
    return [_shard(p, template, s) for s in p.run.shards]


def _shard_pattern(p: Plan, template: str) -> str:
    return p.run.tree.pattern(template, n_shards=p.run.n_shards)


@_rule(
    lambda p: {
        "shards": _shards(p, paths.NOTES_SHARD),
        "stats": _shard_pattern(p, paths.INGEST_STATS),
    }
)
def ingest_notes(p: Plan, wc: Wildcards) -> Declared:
    return p.files.external(p.files.notes_paths) if p.run.notes else []


@_rule(lambda p: [_shard_pattern(p, paths.SENTENCES_SHARD)])
def split_sentences(p: Plan, wc: Wildcards) -> Declared:
    return [_shard(p, paths.NOTES_SHARD, wc["shard"])]


@_rule(lambda p: [Folder(p.run.tree.pattern(paths.MEDCAT_PACK))])
def medcat_pack(p: Plan, wc: Wildcards) -> Declared:
    return [p.run.tree.file(paths.ONTOLOGY_TERMS)]


@_rule(
    lambda p: {
        "pack": Folder(p.run.tree.pattern(paths.SLIM_PACK)),
        "stats": p.run.tree.pattern(paths.SLIM_PACK_STATS),
    }
)
def slim_pack(p: Plan, wc: Wildcards) -> Declared:
    return _listed(p.files.external_file(p.run.config["ner"]["model_pack"]))


@_rule(lambda p: [_shard_pattern(p, paths.ENTITIES_SHARD)])
def ner(p: Plan, wc: Wildcards) -> Declared:
    return {"sentences": _shard(p, paths.SENTENCES_SHARD, wc["shard"]), "pack": p.files.ner_pack()}


@_rule(
    lambda p: {
        "sets": p.run.tree.pattern(paths.ENTITY_SETS),
        "linked": p.run.tree.pattern(paths.LINKED),
        "counts": p.run.tree.pattern(paths.ENTITY_SETS_COUNTS),
    }
)
def sentence_sets(p: Plan, wc: Wildcards) -> Declared:
    return {
        "sentences": _shards(p, paths.SENTENCES_SHARD),
        "entities": _shards(p, paths.ENTITIES_SHARD),
        "terms": p.run.tree.file(paths.ONTOLOGY_TERMS),
    }


@_rule(lambda p: {"sets": p.run.tree.pattern(paths.S_ALL), "counts": p.run.tree.pattern(paths.S_ALL_COUNTS)})
def sentence_set_all(p: Plan, wc: Wildcards) -> Declared:
    return {"sentences": _shards(p, paths.SENTENCES_SHARD)}


@_rule(
    lambda p: {
        "table1": p.run.tree.pattern(paths.TABLE1),
        "table2": p.run.tree.pattern(paths.TABLE2),
        "duplicates": p.run.tree.pattern(paths.EXACT_DUPLICATES),
    }
)
def corpus_stats(p: Plan, wc: Wildcards) -> Declared:
    t = p.run.tree
    return {
        "sets": t.file(paths.ENTITY_SETS),
        "linked": t.file(paths.LINKED),
        "counts": t.file(paths.ENTITY_SETS_COUNTS),
    }


@_rule(lambda p: [p.run.tree.pattern(paths.MANIFEST)])
def corpus_manifest(p: Plan, wc: Wildcards) -> Declared:
    t = p.run.tree
    inputs: dict[str, Files] = {
        "ingest": t.file(paths.INGEST_STATS, n_shards=p.run.n_shards),
        "sentences": _shards(p, paths.SENTENCES_SHARD),
        "counts": p.files.sets_counts_path(),
    }
    if p.run.note_entities:
        inputs |= {
            "entities": _shards(p, paths.ENTITIES_SHARD),
            "terms": t.file(paths.ONTOLOGY_TERMS),
            "coverage": t.file(paths.ONTOLOGY_COVERAGE),
            "ontology": p.files.ontology_file(),
            "pack": p.files.ner_pack(),
        }
    return inputs


@_rule(
    lambda p: {
        "terms": p.run.tree.pattern(paths.ONTOLOGY_TERMS),
        "coverage": p.run.tree.pattern(paths.ONTOLOGY_COVERAGE),
    }
)
def ontology_terms(p: Plan, wc: Wildcards) -> Declared:
    return _listed(p.files.ontology_file())


# -- downloads: the only rules that may touch the network -------------------------------------------


@_rule(lambda p: [p.run.ontology_download])
def download_ontology(p: Plan, wc: Wildcards) -> Declared:
    return []


@_rule(lambda p: [Folder(f"{p.files.hub_dir}/{{hub}}")])  # outside the results folder: every config shares it
def download_model(p: Plan, wc: Wildcards) -> Declared:
    return []


# -- documents and plain sentence corpora ------------------------------------------------------------


@_rule(
    lambda p: {
        "pretrain": p.run.tree.pattern(paths.DOCUMENTS, partition="pretrain"),
        "downstream": p.run.tree.pattern(paths.DOCUMENTS, partition="downstream"),
        "stats": p.run.tree.pattern(paths.DOCUMENTS_STATS),
    }
)
def documents(p: Plan, wc: Wildcards) -> Declared:
    return _shards(p, paths.NOTES_SHARD)


@_rule(lambda p: {"table": p.run.tree.pattern(paths.DOC_TASK), "report": p.run.tree.pattern(paths.DOC_TASK_REPORT)})
def doc_task(p: Plan, wc: Wildcards) -> Declared:
    return {
        "documents": p.run.tree.file(paths.DOCUMENTS, partition="downstream"),
        "extra": p.files.doc_task_files(wc["task"]),
    }


@_rule(
    lambda p: {
        "sentences": p.run.tree.pattern(paths.SENTENCE_CORPUS),
        "stats": p.run.tree.pattern(paths.SENTENCE_CORPUS_STATS),
    }
)
def sentence_corpus(p: Plan, wc: Wildcards) -> Declared:
    from clinsent.corpus.sentences import corpus_paths

    return p.files.external(corpus_paths(p.run.config["sentence_corpora"][wc["sentence_corpus"]]))


# -- training data, training and the release copies -------------------------------------------------


@_rule(lambda p: [p.run.tree.pattern(paths.BATCH_PLAN)])
def batch_plan(p: Plan, wc: Wildcards) -> Declared:
    return dict(p.plan_inputs(wc["plan"]))


@_rule(lambda p: [p.run.tree.pattern(paths.DUPLICATE_ENTITIES)])
def duplicate_stats(p: Plan, wc: Wildcards) -> Declared:
    return {"sets": p.run.tree.file(paths.ENTITY_SETS), "linked": p.run.tree.file(paths.LINKED)}


@_rule(
    lambda p: {
        "rows": p.run.tree.pattern(paths.TRAINING_ROWS),
        "report": p.run.tree.pattern(paths.TRAINING_ROWS_REPORT),
    }
)
def training_rows(p: Plan, wc: Wildcards) -> Declared:
    return p.files.training_data_files(wc["source"])


@_rule(
    lambda p: {
        "model": Folder(p.run.tree.pattern(paths.MODEL)),
        "curve": p.run.tree.pattern(paths.CURVE),
        "selection": p.run.tree.pattern(paths.SELECTION),
    }
)
def train(p: Plan, wc: Wildcards) -> Declared:
    return p.train_inputs(wc["method"], wc["base_model"], wc["seed"])


@_rule(lambda p: [Folder(p.release_dir())])
def release(p: Plan, wc: Wildcards) -> Declared:
    runs = p.release_runs()
    return {
        "models": [r["model"] for r in runs],
        "records": [r["selection"] for r in runs] + [r["curve"] for r in runs],
        "metrics": list(dict.fromkeys(f for r in runs for f in [*r["metrics"].values(), *r["baseline"].values()])),
    }


# -- embeddings, metrics, fine-tunes ----------------------------------------------------------------


def _run(wc: Wildcards) -> tuple[str, str, str]:
    return wc["method"], wc["base_model"], wc["seed"]


@_rule(lambda p: [p.run.tree.pattern(paths.EMBEDDINGS)])
def embed(p: Plan, wc: Wildcards) -> Declared:
    return {"model": p.files.run_file(paths.MODEL, *_run(wc)), "eval_files": p.files.eval_set_files(wc["eval_set"])}


@_rule(lambda p: [Scratch(p.run.tree.pattern(paths.CORPUS_EMBEDDING_PART))])
def corpus_embed_shard(p: Plan, wc: Wildcards) -> Declared:
    name = wc["embedded_corpus"]
    return {"model": p.files.run_file(paths.MODEL, *p.files.corpus_run(name)), "texts": p.files.corpus_input(name)}


@_rule(lambda p: [p.run.tree.pattern(paths.CORPUS_EMBEDDING)])
def corpus_embed(p: Plan, wc: Wildcards) -> Declared:
    """One shard: the model and the texts; several: their parts (the job only joins them)."""
    name = wc["embedded_corpus"]
    if p.files.corpus_shards(name) > 1:
        return {"parts": p.files.corpus_parts(name)}
    return corpus_embed_shard(p, wc)


@_rule(lambda p: [])
def corpus_embeddings(p: Plan, wc: Wildcards) -> Declared:
    return p.files.corpus_embedding_files()


@_rule(lambda p: [p.run.tree.pattern(paths.METRICS)])
def evaluate(p: Plan, wc: Wildcards) -> Declared:
    # the set's own embeddings, or with embed_from those of the set whose texts include its own
    embedded = p.run.eval_sets[wc["eval_set"]].embedded()
    return {
        "embeddings": p.files.embeddings(*_run(wc), embedded),
        "eval_files": p.files.eval_set_files(wc["eval_set"]),
    }


@_rule(lambda p: [p.run.tree.pattern(paths.FINETUNE)])
def finetune(p: Plan, wc: Wildcards) -> Declared:
    return {"model": p.files.run_file(paths.MODEL, *_run(wc)), "eval_files": p.finetune_files(wc["finetune"])}


@_rule(lambda p: [p.run.tree.pattern(paths.CROSS_ENCODER)])
def cross_encoder(p: Plan, wc: Wildcards) -> Declared:
    return {
        "base_model": p.files.model_inputs([str(p.run.config["base_models"][wc["base_model"]])]),
        "eval_files": p.finetune_files(wc["finetune"]),
    }


# -- reports ---------------------------------------------------------------------------------------


def _report_outputs(p: Plan) -> Declared:
    t = p.run.tree
    return {
        "summary": t.pattern(paths.SUMMARY),
        "table_md": t.pattern(paths.RESULTS_TABLE, ext="md"),
        "table_csv": t.pattern(paths.RESULTS_TABLE, ext="csv"),
        "table_tex": t.pattern(paths.RESULTS_TABLE, ext="tex"),
        # the curve figure only where a run evaluates a curve set (else not drawn; results.md says why)
        **(
            {
                "figure_png": t.pattern(paths.CURVES_FIGURE, ext="png"),
                "figure_pdf": t.pattern(paths.CURVES_FIGURE, ext="pdf"),
            }
            if p.has_curves()
            else {}
        ),
        "corpus_md": t.pattern(paths.CORPUS_TABLE, ext="md"),
        "corpus_tex": t.pattern(paths.CORPUS_TABLE, ext="tex"),
        "run": t.pattern(paths.RUN_RECORD),  # which config this report is of (`snakemake --report` checks it)
        "replicates": t.pattern(paths.REPLICATES),  # every run's bootstrap replicates (paired comparisons)
    }


@_rule(_report_outputs)
def report(p: Plan, wc: Wildcards) -> Declared:
    t = p.run.tree
    corpus: dict[str, Files] = {}
    if p.run.note_entities:
        corpus = {
            "table1": t.file(paths.TABLE1),
            "table2": t.file(paths.TABLE2),
            "exact_duplicates": t.file(paths.EXACT_DUPLICATES),
            "duplicate_simulation": t.file(paths.DUPLICATE_ENTITIES),
        }
    elif p.run.note_sentences:
        corpus = {"s_all_counts": t.file(paths.S_ALL_COUNTS)}
    return {
        "metrics": p.evaluation_paths(),
        "selections": [p.files.run_file(paths.SELECTION, *job) for job in p.run.trained_jobs()],
        "curves": _curves(p),
        **corpus,
        "sentence_corpora": [p.files.corpus_stats_path(c) for c in p.run.sentence_corpora],
    }


def _curves(p: Plan) -> list[str]:
    return [p.files.run_file(paths.CURVE, *job) for job in p.run.trained_jobs()]


@_rule(lambda p: [p.run.tree.pattern(paths.EVAL_SET_STATS)])
def eval_set_stats(p: Plan, wc: Wildcards) -> Declared:
    return p.files.eval_set_files(wc["eval_set"])


def _paper_outputs(p: Plan) -> Declared:
    t = p.run.tree
    return {
        "tables": [t.file(paths.PAPER_TABLE, table=n, ext=x) for n in p.run.tables for x in ("md", "csv", "tex")],
        "curves": [t.file(paths.PAPER_CURVES, table=n, ext=x) for n in p.run_tables() for x in ("png", "pdf")],
        "figures": [t.file(paths.PAPER_FIGURE, figure=n, ext=x) for n in p.run.figures for x in ("png", "pdf", "csv")],
    }


@_rule(_paper_outputs)
def paper_report(p: Plan, wc: Wildcards) -> Declared:
    t = p.run.tree
    return {
        "summary": t.file(paths.SUMMARY),
        "replicates": t.file(paths.REPLICATES),
        "curves": _curves(p),
        "extras": p.kind_files(),  # what each table's and figure's kind reads besides these
    }


@_rule(lambda p: [Folder(p.run.tree.pattern(paths.MTEB))])
def mteb_results(p: Plan, wc: Wildcards) -> Declared:
    from clinsent.plan.benchmark import benchmark_models, benchmark_tasks, metrics_files, model_cards

    model = benchmark_models(p)[wc["model"]]
    tasks = benchmark_tasks(p)
    return {
        "metrics": [f for fs in metrics_files(p, model, tasks).values() for f in fs],
        "task_files": [f for task in tasks.values() for f in task["files"]],
        "models": [c.rsplit("/", 1)[0] for c in model_cards(p, model)],  # their cards get the results
    }


def bench_models(p: Plan) -> list[str]:
    """The benchmark's models (config ``models``), each one ``mteb_results`` job."""
    from clinsent.plan.benchmark import benchmark_models

    return list(benchmark_models(p)) if p.run.config.get("models") else []


# -- the PHI guard ---------------------------------------------------------------------------------


@_rule(lambda p: [p.run.tree.pattern(paths.PHI_NGRAMS)])
def phi_sample(p: Plan, wc: Wildcards) -> Declared:
    return _shards(p, paths.NOTES_SHARD)


def _outputs_of(p: Plan, rule: str) -> list[str]:
    """The files of a rule without wildcards (the reports `all` and the PHI scan ask for)."""
    return files_of(RULES[rule].outputs(p))


def _reports(p: Plan) -> list[str]:
    """The report's files, the paper's, the corpus tables and manifest, the benchmark's results."""
    return [
        *_outputs_of(p, "report"),
        *(_outputs_of(p, "paper_report") if p.run.tables or p.run.figures else []),
        *(_outputs_of(p, "corpus_stats") if p.run.note_entities else []),
        *(_outputs_of(p, "corpus_manifest") if p.run.note_sentences else []),
        *(p.run.tree.file(paths.MTEB, model=m) for m in bench_models(p)),
    ]


@_rule(lambda p: [p.run.tree.pattern(paths.PHI_SCAN)])
def phi_scan(p: Plan, wc: Wildcards) -> Declared:
    return {
        "sample": p.run.tree.file(paths.PHI_NGRAMS),
        "reports": _reports(p),  # the benchmark's results and model cards among them
        # the train rule's outputs, all scanned
        "models": [f"{p.files.model_dir(*job)}/{f}" for job in p.run.trained_jobs() for f in paths.RUN_FILES],
        "releases": p.release_dirs(),  # the release copies and their cards
    }


# -- the targets -----------------------------------------------------------------------------------


@_rule(lambda p: [], name="all")
def targets(p: Plan, wc: Wildcards) -> Declared:
    """The default target's inputs: what a whole run makes."""
    return [
        *_outputs_of(p, "report"),
        *(_outputs_of(p, "corpus_stats") if p.run.note_entities else []),
        *(_outputs_of(p, "corpus_manifest") if p.run.note_sentences else []),
        *(_outputs_of(p, "paper_report") if p.run.tables or p.run.figures else []),
        *(_outputs_of(p, "phi_scan") if p.run.phi_scan else []),
        *(p.run.tree.file(paths.MTEB, model=m) for m in bench_models(p)),
        *p.release_dirs(),  # each trained run's release copy, its card with the eval metrics
        *p.files.corpus_embedding_files(),
    ]
