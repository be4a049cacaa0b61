# Documents (the healthcare-LM paper): whole notes from the ingested shards, split by patient
# into a pre-training and a downstream partition, with their length statistics (Table 12,
# Figure 7); labelled document tasks (note category, ICD-9 triage) from the downstream one.


rule documents:
    """Whole notes as documents: a seeded pre-training sample and the held-out patients' notes."""
    input:
        expand(f"{SHARD_DIR}/notes/{{shard}}.parquet", shard=SHARDS),
    output:
        pretrain=f"{R}/documents/pretrain.parquet",
        downstream=f"{R}/documents/downstream.parquet",
        stats=PLAN.documents_stats_path(),
    params:
        documents=config["documents"],
    log:
        f"{LOGS}/documents.log",
    benchmark:
        f"{BENCH}/documents.tsv"
    resources:
        mem_mb=config["corpus"]["mem_mb"]["gather"],
    conda:
        "../../envs/corpus.yaml"
    script:
        "../scripts/documents.py"


rule doc_task:
    """One labelled document task (doc_tasks.<name>) drawn from the downstream documents."""
    input:
        documents=rules.documents.output.downstream,
        extra=lambda wc: PLAN.doc_task_files(wc.task),
    output:
        table=f"{R}/doc_tasks/{{task}}.parquet",
        report=f"{R}/doc_tasks/{{task}}.json",
    params:
        task=lambda wc: config["doc_tasks"][wc.task],
    log:
        f"{LOGS}/doc_tasks/{{task}}.log",
    benchmark:
        f"{BENCH}/doc_tasks/{{task}}.tsv"
    conda:
        "../../envs/corpus.yaml"
    script:
        "../scripts/doc_task.py"
