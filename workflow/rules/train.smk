# Training: one job per method x base model x seed (resources: gpu=1; CUDA when present).


def train_inputs(wildcards):
    inputs = {"eval_files": all_eval_files(), "base_model": local_model_input(wildcards)}
    if objective(wildcards.method) != "none":
        inputs["plan"] = f"{R}/batches/{wildcards.method}/seed{wildcards.seed}.parquet"
        inputs["sets"] = rules.sentence_sets.output.sets
        inputs["linked"] = rules.sentence_sets.output.linked
    return inputs


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
    log:
        f"{LOGS}/train/{{method}}_{{base_model}}_seed{{seed}}.log",
    benchmark:
        f"{BENCH}/train/{{method}}_{{base_model}}_seed{{seed}}.tsv"
    conda:
        "../../envs/train.yaml"
    threads: 1
    resources:
        gpu=1,
        mem_mb=8000,
    script:
        "../scripts/train.py"
