# Training: one job per method x base model x seed (resources: gpu=1; CUDA when present).


rule train:
    """Train one model, evaluate every n steps, keep the step with the best selection-set Spearman."""
    input:
        unpack(train_inputs),
    output:
        model=directory(f"{R}/models/{{method}}/{{base_model}}/seed{{seed}}/model"),
        curve=f"{R}/models/{{method}}/{{base_model}}/seed{{seed}}/curve.csv",
        selection=f"{R}/models/{{method}}/{{base_model}}/seed{{seed}}/selection.json",
    params:
        settings=train_settings,
        base_model=lambda wc: config["base_models"][wc.base_model],
        eval_sets=config["eval_sets"],
        selection_set=config["selection_set"],
        # checkpoints and the best model so far: kept when a job is killed, so a rerun resumes
        checkpoint_dir=lambda wc: f"{R}/checkpoints/{wc.method}/{wc.base_model}/seed{wc.seed}",
    log:
        f"{LOGS}/train/{{method}}_{{base_model}}_seed{{seed}}.log",
    benchmark:
        f"{BENCH}/train/{{method}}_{{base_model}}_seed{{seed}}.tsv"
    conda:
        "../../envs/train.yaml"
    threads: config["training"]["threads"]
    resources:
        gpu=1,
        mem_mb=8000,
    script:
        "../scripts/train.py"
