# Embeddings: every eval set through every selected model (one job per model: it loads once).


rule embed:
    """Export embeddings (id, text, float32 vector) of every eval set with one selected model."""
    input:
        model=f"{R}/models/{{method}}/{{base_model}}/seed{{seed}}/model",
        eval_files=all_eval_files,
    output:
        [f"{R}/embeddings/{{method}}/{{base_model}}/seed{{seed}}/{name}.parquet" for name in EVAL_SETS],
    params:
        eval_sets=config["eval_sets"],
    log:
        f"{LOGS}/embed/{{method}}_{{base_model}}_seed{{seed}}.log",
    benchmark:
        f"{BENCH}/embed/{{method}}_{{base_model}}_seed{{seed}}.tsv"
    conda:
        "../../envs/train.yaml"
    threads: 1  # mostly start-up and imports: two embed or evaluate jobs share two cores
    resources:
        mem_mb=4000,
    script:
        "../scripts/embed.py"
