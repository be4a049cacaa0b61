"""The rules that apply a trained model, as the plan declares them (``workflow/rules/embed.smk``,
``evaluate.smk``, ``finetune.smk``): embeddings, corpus embeddings, metrics, fine-tunes and the
cross-encoder baseline."""

from __future__ import annotations

from typing import TYPE_CHECKING

from clinsent import paths
from clinsent.plan.rules.base import Declarations, Declared, Scratch, Wildcards

if TYPE_CHECKING:
    from clinsent.plan.layout import Plan

DECLARED = Declarations()
_rule = DECLARED.rule


def _run(wc: Wildcards) -> tuple[str, str, str]:
    return wc["method"], wc["base_model"], wc["seed"]


@_rule(lambda p: [p.run.tree.pattern(paths.EMBEDDINGS)])
def embed(p: Plan, wc: Wildcards) -> Declared:
    return {"model": p.files.run_file(paths.MODEL, *_run(wc)), "eval_files": p.files.eval_set_files(wc["eval_set"])}


@_rule(lambda p: [Scratch(p.run.tree.pattern(paths.CORPUS_EMBEDDING_PART))])
def corpus_embed_shard(p: Plan, wc: Wildcards) -> Declared:
    name = wc["embedded_corpus"]
    model = p.files.run_file(paths.MODEL, *p.files.corpus_run(name))
    quality = p.files.corpus_quality_set(name)  # an eval set the quantized vectors are scored on (and made within)
    return {
        "model": model,
        "texts": p.files.corpus_input(name),
        **({"quality_files": p.files.eval_set_files(quality)} if quality else {}),
    }


@_rule(lambda p: [p.run.tree.pattern(paths.CORPUS_EMBEDDING)])
def corpus_embed(p: Plan, wc: Wildcards) -> Declared:
    """One shard: the model and the texts; several: their parts and the texts (the job joins the
    parts, checked against the texts: :func:`clinsent.embedding.sharded.gather_shards`)."""
    name = wc["embedded_corpus"]
    if p.files.corpus_shards(name) > 1:
        return {"parts": p.files.corpus_parts(name), "texts": p.files.corpus_input(name)}
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
        "base_model": p.files.model_inputs([p.run.config.base_models[wc["base_model"]]]),
        "eval_files": p.finetune_files(wc["finetune"]),
    }
