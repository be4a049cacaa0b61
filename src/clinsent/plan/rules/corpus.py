"""The rules before training, as the plan declares them (``workflow/rules/corpus.smk``,
``definitions.smk``, ``downloads.smk``, ``documents.smk``, ``sentence_corpus.smk``): the notes' shards,
sentences, entities and sets, the ontology and the MedCAT pack, the two downloads, the documents
and document tasks, the plain sentence corpora."""

from __future__ import annotations

from typing import TYPE_CHECKING

from clinsent import paths
from clinsent.plan.rules.base import Declarations, Declared, Files, Folder, Wildcards, listed

if TYPE_CHECKING:
    from clinsent.plan.layout import Plan

DECLARED = Declarations()
_rule = DECLARED.rule


def _shard(p: Plan, template: str, shard: str) -> str:
    return p.run.tree.file(template, n_shards=p.run.n_shards, shard=shard)


def shard_files(p: Plan, template: str) -> list[str]:
    return [_shard(p, template, s) for s in p.run.shards]


def _shard_pattern(p: Plan, template: str) -> str:
    return p.run.tree.pattern(template, n_shards=p.run.n_shards)


@_rule(
    lambda p: {
        "shards": shard_files(p, paths.NOTES_SHARD),
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
    return listed(p.files.external_file(p.run.config.ner.model_pack or ""))


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
        "sentences": shard_files(p, paths.SENTENCES_SHARD),
        "entities": shard_files(p, paths.ENTITIES_SHARD),
        "terms": p.run.tree.file(paths.ONTOLOGY_TERMS),
    }


@_rule(lambda p: {"sets": p.run.tree.pattern(paths.S_ALL), "counts": p.run.tree.pattern(paths.S_ALL_COUNTS)})
def sentence_set_all(p: Plan, wc: Wildcards) -> Declared:
    return {"sentences": shard_files(p, paths.SENTENCES_SHARD)}


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
        "sentences": shard_files(p, paths.SENTENCES_SHARD),
        "counts": p.files.sets_counts_path(),
    }
    if p.run.note_entities:
        inputs |= {
            "entities": shard_files(p, paths.ENTITIES_SHARD),
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
    return listed(p.files.ontology_file())


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
    return shard_files(p, paths.NOTES_SHARD)


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

    return p.files.external(corpus_paths(p.run.config.sentence_corpora[wc["sentence_corpus"]].path))
