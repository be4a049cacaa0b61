"""How many jobs each rule gets in a run from scratch: what ``snakemake -n`` lists (tested
against Snakemake's dry run for every paper config and its demo twin, ``tests/plan/test_plan.py``).
"""

from __future__ import annotations

from clinsent import paths
from clinsent.plan.benchmark import benchmark_models
from clinsent.plan.layout import Plan


def job_counts(plan: Plan) -> dict[str, int]:
    """How many jobs each rule gets in a run from scratch (what ``snakemake -n`` lists; tested
    against it for the paper configs)."""
    under = plan.run.tree.folder  # the folder of a kind of file
    trained = list(plan.run.trained_jobs())
    counts: dict[str, int] = {"all": 1, "report": 1}
    if plan.run.tables or plan.run.figures:
        counts["paper_report"] = 1
    counts["train"] = len(trained)
    report_files = plan.kind_files()
    embedded = {plan.files.embeddings(m, b, s, plan.run.eval_sets[e].embedded()) for m, b, s, e in plan.zero_shot()}
    embedded |= {f for f in report_files if f.startswith(under(paths.EMBEDDINGS))}
    counts["embed"] = len(embedded)
    counts["evaluate"] = len(plan.zero_shot())
    counts["finetune"] = len(plan.finetune_jobs())
    counts["cross_encoder"] = len(plan.cross_encoder_jobs())
    needs = [plan.train_inputs(m, b, s) for m, b, s in trained]
    counts["batch_plan"] = len({n["plan"] for n in needs if "plan" in n})
    files = {f for n in needs for v in n.values() for f in ([v] if isinstance(v, str) else v)}
    files |= {f for name in plan.run.eval_sets for f in plan.files.eval_set_files(name)}
    counts["training_rows"] = len({f for f in files if f.startswith(under(paths.TRAINING_ROWS))})
    models = [
        plan.files.model_inputs([str(plan.run.config["base_models"][b])]) for b, _, _ in plan.cross_encoder_jobs()
    ]
    counts["download_model"] = len(
        {f for f in [*files, *(f for m in models for f in m)] if f.startswith(f"{plan.files.hub_dir}/")}
    )
    counts["sentence_corpus"] = len(plan.run.sentence_corpora)
    counts["eval_set_stats"] = len({f for f in report_files if f.startswith(under(paths.EVAL_SET_STATS))})
    counts["doc_task"] = len({f for f in files if f.startswith(under(paths.DOC_TASK))})
    documents = counts["doc_task"] > 0 or any(
        f.startswith(under(paths.DOCUMENTS_STATS)) for f in [*files, *report_files]
    )
    counts["documents"] = int(documents)
    if plan.run.note_sentences:
        counts.update(
            split_sentences=plan.run.n_shards, corpus_manifest=1, sentence_set_all=int(not plan.run.note_entities)
        )
    if plan.run.note_entities:
        counts.update(ner=plan.run.n_shards, sentence_sets=1, corpus_stats=1, duplicate_stats=1, ontology_terms=1)
        counts["download_ontology"] = int(not plan.run.config["ontology"]["path"])
        counts["medcat_pack"] = int(not plan.run.config["ner"]["model_pack"])
        counts["slim_pack"] = int(bool(plan.run.config["ner"]["model_pack"] and plan.run.config["ner"]["slim_pack"]))
    counts["ingest_notes"] = int(plan.run.notes and (plan.run.note_sentences or documents or plan.run.phi_scan))
    counts["phi_sample"] = counts["phi_scan"] = int(plan.run.phi_scan)
    counts["corpus_embed"] = len(plan.run.corpus_embeddings)
    counts["corpus_embed_shard"] = sum(
        plan.files.corpus_shards(n) for n in plan.run.corpus_embeddings if plan.files.corpus_shards(n) > 1
    )
    counts["release"] = len(plan.release_dirs())  # one job for every run's copy
    if plan.run.config.get("models"):
        counts["mteb_results"] = len(benchmark_models(plan))
    return {k: v for k, v in sorted(counts.items()) if v}
