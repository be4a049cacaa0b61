# Training: one job per method x base model x seed (resources: gpu=1; CUDA when present), and
# the training rows that methods trained on rows (e.g. NLI triplets) read.


rule training_rows:
    """Read one `training_data` entry as distributed into training rows with named text columns."""
    input:
        training_data_files,
    output:
        rows=f"{R}/training_rows/{{source}}.parquet",
        report=f"{R}/training_rows/{{source}}.json",
    params:
        entry=lambda wc: config["training_data"][wc.source],
    log:
        f"{LOGS}/training_rows/{{source}}.log",
    benchmark:
        f"{BENCH}/training_rows/{{source}}.tsv"
    conda:
        "../../envs/train.yaml"
    script:
        "../scripts/training_rows.py"


rule train:
    """Train one model, evaluate the curve sets every n steps, keep the step with the best
    selection-set headline metric."""
    input:
        unpack(train_inputs),
    output:
        model=directory(f"{R}/models/{{method}}/{{base_model}}/seed{{seed}}/model"),
        curve=f"{R}/models/{{method}}/{{base_model}}/seed{{seed}}/curve.csv",
        selection=f"{R}/models/{{method}}/{{base_model}}/seed{{seed}}/selection.json",
    params:
        # only this method's own knobs (with their defaults): a change elsewhere reruns nothing here
        method=lambda wc: method_entry(wc.method).train_params(),
        base_model=lambda wc: start_model(wc.method, wc.base_model, wc.seed),
        eval_sets=lambda wc: {name: EVAL[name].curve_params() for name in curve_sets(wc.method)},
        selection_set=lambda wc: method_entry(wc.method).selection_set,
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
