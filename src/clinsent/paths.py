"""The results path grammar: where every file of a run lives under its results folder, written once.

Each template is a path under the results folder with Snakemake's wildcard names in braces
(``models/{method}/{base_model}/seed{seed}/model``). The plan fills them (:meth:`Tree.file`);
the rules take their ``input:``, ``output:``, ``log:`` and ``benchmark:`` patterns from them
(:meth:`Tree.pattern`, :meth:`Tree.log`, :meth:`Tree.benchmark`), so the plan and the DAG
cannot disagree on a path. ``tests/plan/test_paths.py`` fails on a results path pattern spelled
anywhere else.

A template names the part of the run it holds; a wildcard the plan fills itself (the shard
count of the corpus folder) is given to :meth:`Tree.pattern` and the others stay Snakemake's.
"""

from __future__ import annotations

import string
from dataclasses import dataclass
from typing import Any

SEED = "seed{seed}"
RUN = "{method}/{base_model}/" + SEED  # one trained run: method x base model x seed
RUN_STEM = "{method}_{base_model}_" + SEED  # the same run in one file name (logs, benchmarks)

# trained runs and what is read from them
MODEL_DIR = "models/" + RUN
MODEL = MODEL_DIR + "/model"
CURVE = MODEL_DIR + "/curve.csv"
SELECTION = MODEL_DIR + "/selection.json"
RUN_FILES = ("model", "curve.csv", "selection.json")  # the train rule's outputs, under MODEL_DIR
CHECKPOINTS = "checkpoints/" + RUN
EMBEDDINGS = "embeddings/" + RUN + "/{eval_set}.parquet"
METRICS = "metrics/" + RUN + "/{eval_set}.json"
FINETUNE = "finetune/" + RUN + "/{finetune}.json"
CROSS_ENCODER = "cross_encoder/{base_model}/" + SEED + "/{finetune}.json"
RELEASE = "release"
RELEASE_RUN = RUN  # a run's folder under the release copy

# training data
BATCH_PLAN = "batches/{plan}/" + SEED + ".parquet"
TRAINING_ROWS = "training_rows/{source}.parquet"
TRAINING_ROWS_REPORT = "training_rows/{source}.json"
SENTENCE_CORPUS = "sentence_corpora/{sentence_corpus}/sentences.parquet"
SENTENCE_CORPUS_STATS = "sentence_corpora/{sentence_corpus}/stats.json"
# a training source tokenized once (clinsent.data.tokens): the source, the tokenizer, the length
TOKENS = "tokens/{token_source}/{tokenizer}-{token_length}.arrow"

# the notes: shards (the count is part of the folder, so two layouts never mix), sets, documents
SHARD_DIR = "corpus/shards{n_shards}"
NOTES_SHARD = SHARD_DIR + "/notes/{shard}.parquet"
INGEST_STATS = SHARD_DIR + "/ingest.json"
SENTENCES_SHARD = SHARD_DIR + "/sentences/{shard}.parquet"
ENTITIES_SHARD = SHARD_DIR + "/entities/{shard}.parquet"
ENTITY_SETS = "sets/sentences.parquet"
ENTITY_SETS_COUNTS = "sets/counts.json"
LINKED = "sets/entities_linked.parquet"
S_ALL = "sets/s_all.parquet"
S_ALL_COUNTS = "sets/s_all.json"
ONTOLOGY_TERMS = "ontology/terms.parquet"
ONTOLOGY_COVERAGE = "ontology/coverage.csv"
MEDCAT_PACK = "ner/medcat_pack"
SLIM_PACK = "ner/slim_pack"
SLIM_PACK_STATS = "ner/slim_pack.json"
DOCUMENTS = "documents/{partition}.parquet"  # pretrain or downstream (clinsent.corpus.documents.PARTITIONS)
DOCUMENTS_STATS = "documents/stats.json"
DOC_TASK = "doc_tasks/{task}.parquet"
DOC_TASK_REPORT = "doc_tasks/{task}.json"
CORPUS_EMBEDDING = "corpus_embeddings/{embedded_corpus}.parquet"
CORPUS_EMBEDDING_PART = "corpus_embeddings/{embedded_corpus}.parts/{part}.parquet"

# statistics and reports
TABLE1 = "stats/table1_entities.csv"
TABLE2 = "stats/table2_sets.csv"
EXACT_DUPLICATES = "stats/exact_duplicates.csv"
DUPLICATE_ENTITIES = "stats/duplicate_entities.json"
MANIFEST = "stats/manifest.json"
EVAL_SET_STATS = "stats/eval_sets/{eval_set}.json"
RUN_RECORD = "stats/run.json"
REPLICATES = "stats/bootstrap.parquet"
PHI_NGRAMS = "phi/ngrams.json"
PHI_QUARANTINE = "phi/quarantine"  # owner-only, never shared
PHI_FAILED = "phi/scan_failed.json"  # the record of the last failed scan, while it stands
PHI_SCAN = "stats/phi_scan.json"
SUMMARY = "summary.csv"
RESULTS_TABLE = "tables/results.{ext}"
CORPUS_TABLE = "tables/corpus.{ext}"
CURVES_FIGURE = "figures/curves.{ext}"
PAPER_TABLES = "tables/paper"
PAPER_FIGURES = "figures/paper"
PAPER_TABLE = PAPER_TABLES + "/{table}.{ext}"
PAPER_CURVES = PAPER_FIGURES + "/curves_{table}.{ext}"
PAPER_FIGURE = PAPER_FIGURES + "/{figure}.{ext}"
MTEB = "mteb/{model}"
RESULTS = "{results}"  # in a config's path (an eval set's): this run's results folder

# each raw input's content key (clinsent.safety.stamps): the file the DAG compares by time, rewritten
# only when the input's content changes, and the stat record that spares re-reading an unchanged input
INPUT_KEY = "inputs/{input_name}.key"
INPUT_STAT = "inputs/.stat/{input_name}.json"
CACHE = "cache"  # derived artefacts keyed by content (ONNX exports: cache/onnx/<key>/), owner-only

LOGS = "logs"
BENCHMARKS = "benchmarks"
# each rule's log and benchmark, without the extension (<results>/logs/<step>.log, benchmarks/<step>.tsv)
STEPS = {
    "ingest_notes": "ingest_notes",
    "split_sentences": "split_sentences/{shard}",
    "medcat_pack": "medcat_pack",
    "slim_pack": "slim_pack",
    "ner": "ner/{shard}",
    "sentence_sets": "sentence_sets",
    "sentence_set_all": "sentence_set_all",
    "corpus_stats": "corpus_stats",
    "corpus_manifest": "corpus_manifest",
    "ontology_terms": "ontology_terms",
    "download_ontology": "download_ontology",
    "download_model": "download_model/{hub}",
    "documents": "documents",
    "doc_task": "doc_tasks/{task}",
    "sentence_corpus": "sentence_corpus/{sentence_corpus}",
    "batch_plan": "batch_plan/{plan}_" + SEED,
    "duplicate_stats": "duplicate_stats",
    "training_rows": "training_rows/{source}",
    "tokens": "tokens/{token_source}_{tokenizer}_{token_length}",
    "train": "train/" + RUN_STEM,
    "release": "release",
    "embed": "embed/" + RUN_STEM + "_{eval_set}",
    "corpus_embed_shard": "corpus_embed/{embedded_corpus}_part{part}",
    "corpus_embed": "corpus_embed/{embedded_corpus}",
    "evaluate": "evaluate/" + RUN_STEM + "_{eval_set}",
    "finetune": "finetune/" + RUN_STEM + "_{finetune}",
    "cross_encoder": "cross_encoder/{base_model}_" + SEED + "_{finetune}",
    "report": "report",
    "eval_set_stats": "eval_set_stats/{eval_set}",
    "paper_report": "paper_report",
    "mteb_results": "mteb_results/{model}",
    "phi_sample": "phi_sample",
    "phi_scan": "phi_scan",
}


def seed_folder(seed: int | str) -> str:
    """A seed's folder name (``seed0``): also the revision a benchmark's model card gives a run."""
    return fill(SEED, seed=seed)


def tokenizer_key(model: str) -> str:
    """The tokenizer part of a token file's name for a model not among the base models (MED-SE's
    ``definition_model``): ``model-`` and a hash of the model's spec (a base model is named by its key)."""
    import hashlib

    return "model-" + hashlib.sha256(model.encode()).hexdigest()[:12]


def top(template: str) -> str:
    """The folder right under the results folder that a template's files lie in (``models``)."""
    return template.split("/", 1)[0]


def fill(template: str, **known: Any) -> str:
    """``template`` with the wildcards in ``known`` filled and every other one left as it is."""
    out = []
    for text, field, spec, _ in string.Formatter().parse(template):
        out.append(text)
        if field is not None:
            out.append(format(known[field], spec or "") if field in known else "{" + field + "}")
    return "".join(out)


def fields(template: str) -> list[str]:
    """The wildcards a template names, in order."""
    return [f for _, f, _, _ in string.Formatter().parse(template) if f is not None]


@dataclass(frozen=True)
class Tree:
    """One results folder: its files (:meth:`file`) and the rules' patterns (:meth:`pattern`)."""

    root: str

    def file(self, template: str, **wildcards: Any) -> str:
        """The file a template names for these wildcards (all of them given)."""
        missing = [f for f in fields(template) if f not in wildcards]
        if missing:
            raise KeyError(f"{template}: no value for {', '.join(missing)}")
        return f"{self.root}/{fill(template, **wildcards)}"

    def pattern(self, template: str, **known: Any) -> str:
        """A rule's pattern: the wildcards in ``known`` filled, the others left to Snakemake."""
        return f"{self.root}/{fill(template, **known)}"

    def log(self, rule: str) -> str:
        return f"{self.root}/{LOGS}/{STEPS[rule]}.log"

    def benchmark(self, rule: str) -> str:
        return f"{self.root}/{BENCHMARKS}/{STEPS[rule]}.tsv"

    def folder(self, template: str) -> str:
        """The folder every file of a template lies under (``<results>/embeddings/``)."""
        head = template.split("{", 1)[0]
        return f"{self.root}/{head.rsplit('/', 1)[0]}/" if "/" in head else f"{self.root}/"

    def holds(self, path: str) -> bool:
        """Whether a path lies under this results folder (a file of the DAG, not a user's)."""
        return str(path).startswith(f"{self.root}/")
