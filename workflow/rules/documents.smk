# Documents (the healthcare-LM paper): whole notes from the ingested shards, split by patient
# into a pre-training and a downstream partition, with their length statistics (Table 12,
# Figure 7); labelled document tasks (note category, ICD-9 triage) from the downstream one.
from clinsent.corpus.doc_tasks import per_class_needs


rule documents:
    """Whole notes as documents: a seeded pre-training sample and the held-out patients' notes."""
    input:
        IN("documents"),
    output:
        **OUT("documents"),
    params:
        documents=to_params(CONF.documents),
    log:
        T.log("documents"),
    benchmark:
        T.benchmark("documents")
    resources:
        mem_mb=CONF.corpus.mem_mb.gather,
    conda:
        "../../envs/corpus.yaml"
    script:
        "../scripts/documents.py"


rule doc_task:
    """One labelled document task (doc_tasks.<name>) drawn from the downstream documents."""
    input:
        IN("doc_task"),
    output:
        **OUT("doc_task"),
    params:
        task=lambda wc: to_params(CONF.doc_tasks[wc.task]),
        # the few-shot sizes eval sets and fine-tune entries ask of it: checked first; they change no output
        needs=lambda wc, output: Untracked(per_class_needs(CONF, output.table)),
    log:
        T.log("doc_task"),
    benchmark:
        T.benchmark("doc_task")
    conda:
        "../../envs/corpus.yaml"
    script:
        "../scripts/doc_task.py"
