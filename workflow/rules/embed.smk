# Embeddings: one job per model and eval set, so adding or changing an eval set reruns only its
# own embed and evaluate jobs.


rule embed:
    """Export embeddings (id, text, float32 vector) of one eval set's texts with one selected model."""
    input:
        model=f"{R}/models/{{method}}/{{base_model}}/seed{{seed}}/model",
        eval_files=lambda wc: eval_set_files(wc.eval_set),
    output:
        f"{R}/embeddings/{{method}}/{{base_model}}/seed{{seed}}/{{eval_set}}.parquet",
    params:
        eval_set=lambda wc: PLAN.eval_params(wc.eval_set),
    log:
        f"{LOGS}/embed/{{method}}_{{base_model}}_seed{{seed}}_{{eval_set}}.log",
    benchmark:
        f"{BENCH}/embed/{{method}}_{{base_model}}_seed{{seed}}_{{eval_set}}.tsv"
    conda:
        "../../envs/train.yaml"
    threads: 1  # mostly start-up and imports: two embed or evaluate jobs share two cores
    resources:
        mem_mb=4000,
        gpu=EMBED_GPU,  # 1 where the pool has a GPU (embed_device: auto), else 0: CPU runs keep their parallelism
    script:
        "../scripts/embed.py"
