# Embeddings: one job per model and eval set, so adding or changing an eval set reruns only its
# own embed and evaluate jobs.


rule embed:
    """Export embeddings (id, text, float32 vector) of one eval set's texts with one selected model."""
    input:
        IN("embed"),
    output:
        *OUT("embed"),
    params:
        eval_set=lambda wc: PLAN.eval_params(wc.eval_set),
    log:
        T.log("embed"),
    benchmark:
        T.benchmark("embed")
    conda:
        "../../envs/train.yaml"
    threads: 1  # mostly start-up and imports: two embed or evaluate jobs share two cores
    resources:
        mem_mb=4000,
        gpu=EMBED_GPU,  # 1 where the pool has a GPU (embed_device: auto), else 0: CPU runs keep their parallelism
    script:
        "../scripts/embed.py"


rule corpus_embed_shard:
    """One shard of a sharded corpus embedding (corpus_embeddings.<name>.shards > 1): a contiguous
    part of the input's chunks, each chunk kept as it is finished, so a killed job resumes after
    its last one (clinsent.embedding.sharded); a GPU slot where embed jobs use a GPU, on Slurm its own job."""
    input:
        IN("corpus_embed_shard"),
    output:
        *OUT("corpus_embed_shard"),
    params:
        entry=lambda wc: PLAN.files.corpus_params(wc.embedded_corpus),
        results=Untracked(R),  # where the job's cache lives (<results>/cache): changes no output
        memory=lambda wc: Untracked(PLAN.files.corpus_memory(wc.embedded_corpus)),  # fast or flat: no output
    log:
        T.log("corpus_embed_shard"),
    benchmark:
        T.benchmark("corpus_embed_shard")
    conda:
        "../../envs/train.yaml"
    threads: lambda wc: PLAN.files.corpus_threads(wc.embedded_corpus, shard=True)
    resources:
        mem_mb=4000,
        gpu=lambda wc: EMBED_GPU if PLAN.files.corpus_gpu(wc.embedded_corpus, shard=True) else 0,
    script:
        "../scripts/corpus_embed.py"


rule corpus_embed:
    """Embed one configured corpus (corpus_embeddings.<name>) with a trained run: (id, vector) parquet
    written in chunks (memory flat whatever the corpus's size; a killed job resumes after its last
    chunk), the model, its identity and pooling in its metadata; owner-only (the folder always, the
    file too when the texts are the notes'). With shards, the cheap job that joins the parts in order."""
    input:
        IN("corpus_embed"),
    output:
        *OUT("corpus_embed"),
    params:
        entry=lambda wc: PLAN.files.corpus_params(wc.embedded_corpus),
        results=Untracked(R),  # where the job's cache lives (<results>/cache): changes no output
        memory=lambda wc: Untracked(PLAN.files.corpus_memory(wc.embedded_corpus)),  # fast or flat: no output
    log:
        T.log("corpus_embed"),
    benchmark:
        T.benchmark("corpus_embed")
    conda:
        "../../envs/train.yaml"
    threads: lambda wc: PLAN.files.corpus_threads(wc.embedded_corpus, shard=False)
    resources:
        mem_mb=4000,
        # a GPU slot of the pool where there is one (clinsent.gpu.slots), as the embed jobs; none to join parts
        gpu=lambda wc: EMBED_GPU if PLAN.files.corpus_gpu(wc.embedded_corpus, shard=False) else 0,
    script:
        "../scripts/corpus_embed.py"


rule corpus_embeddings:
    """Every configured corpus embedding (part of `all`; alone: snakemake corpus_embeddings)."""
    input:
        IN("corpus_embeddings"),
