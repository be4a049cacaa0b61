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
        method=train_param("method"),
        base_model=train_param("base_model"),
        eval_sets=train_param("eval_sets"),
        selection_set=train_param("selection_set"),
        # checkpoints and the best model so far: kept when a job is killed, so a rerun resumes
        checkpoint_dir=train_param("checkpoint_dir"),
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


localrules:
    release,


rule release:
    """A trained run's release copy: its model's files hard-linked (a copy where links cannot be
    made) and a card (README.md) with the zero-shot eval metrics added (clinsent.model_card). A
    later rule than train, so evaluation never rewrites the model folder its own jobs read."""
    input:
        model=f"{R}/models/{{method}}/{{base_model}}/seed{{seed}}/model",
        selection=f"{R}/models/{{method}}/{{base_model}}/seed{{seed}}/selection.json",
        curve=f"{R}/models/{{method}}/{{base_model}}/seed{{seed}}/curve.csv",
        metrics=lambda wc: list(PLAN.release_metrics(wc.method, wc.base_model, wc.seed).values()),
    output:
        directory(f"{R}/release/{{method}}/{{base_model}}/seed{{seed}}"),
    params:
        eval_sets=lambda wc: list(PLAN.release_metrics(wc.method, wc.base_model, wc.seed)),
        headlines=lambda wc: {e: PLAN.eval_sets[e].task.headline for e in PLAN.release_metrics(wc.method, wc.base_model, wc.seed)},
        base_model=lambda wc: str(config["base_models"][wc.base_model]),
        card=config.get("model_card") or {},
    log:
        f"{LOGS}/release/{{method}}_{{base_model}}_seed{{seed}}.log",
    benchmark:
        f"{BENCH}/release/{{method}}_{{base_model}}_seed{{seed}}.tsv"
    conda:
        "../../envs/report.yaml"
    script:
        "../scripts/release.py"
