# Training: one job per method x base model x seed (resources: gpu=training.processes; CUDA when present), and
# the training rows that methods trained on rows (e.g. NLI triplets) read.


rule training_rows:
    """Read one `training_data` entry as distributed into training rows with named text columns."""
    input:
        IN("training_rows"),
    output:
        **OUT("training_rows"),
    params:
        entry=lambda wc: to_params(CONF.training_data[wc.source]),
    log:
        T.log("training_rows"),
    benchmark:
        T.benchmark("training_rows")
    conda:
        "../../envs/train.yaml"
    script:
        "../scripts/training_rows.py"


rule tokens:
    """Tokenize a training source once for a tokenizer and a length (clinsent.data.tokens): the
    train jobs gather their batches from it, memory-mapped, with no tokenizer in the step."""
    input:
        IN("tokens"),
    output:
        *OUT("tokens"),
    params:
        spec=lambda wc: PLAN.token_params(wc.token_source, wc.tokenizer, wc.token_length),
    log:
        T.log("tokens"),
    benchmark:
        T.benchmark("tokens")
    conda:
        "../../envs/train.yaml"
    script:
        "../scripts/tokens.py"


rule train:
    """Train one model, evaluate the curve sets every n steps, keep the step with the best
    selection-set headline metric."""
    input:
        IN("train"),
    output:
        **OUT("train"),
    params:
        # only this method's own knobs (with their defaults): a change elsewhere reruns nothing here
        method=train_param("method"),
        base_model=train_param("base_model"),
        eval_sets=train_param("eval_sets"),
        selection_set=train_param("selection_set"),
        eval_max_length=train_param("eval_max_length"),  # the evaluation length the model is saved with
        notes=lambda wc: PLAN.train_params(wc.method, wc.base_model, wc.seed).get("notes"),  # the card's words
        # checkpoints and the best model so far: kept when a job is killed, so a rerun resumes
        checkpoint_dir=train_param("checkpoint_dir"),
        # read by the job, changing no output: progress lines, trackers' event files, the card's words
        progress=Untracked(CONF.progress),
        tracking=Untracked(CONF.tracking),
        card=Untracked(CONF.model_card),
        # how the job runs, not what it trains (clinsent.train.launch): a change reruns nothing
        processes=Untracked(CONF.training.processes),
        nodes=Untracked(CONF.training.nodes),
    log:
        T.log("train"),
    benchmark:
        T.benchmark("train")
    conda:
        "../../envs/train.yaml"
    threads: CONF.training.threads
    resources:
        # one node: gpu=processes (Slurm's --gpus=N; the local slots take N devices); across nodes
        # gres=gpu:N per node, nodes, tasks_per_node and mpi, as the Slurm executor plugin maps them
        **PLAN.train_resources(),
    script:
        "../scripts/train.py"


localrules:
    release,


rule release:
    """The release copies of every trained run (results/release/<method>/<base model>/seed<k>/):
    each model's files hard-linked (a copy where links cannot be made) and a card (README.md)
    with the zero-shot eval metrics added (clinsent.release.card). A later rule than train, so
    evaluation never rewrites the model folders its own jobs read; one job for all (each copy is
    links and a card: seconds), so a grid of hundreds of runs adds one job, not hundreds."""
    input:
        IN("release"),
    output:
        *OUT("release"),
    params:
        runs=PLAN.release_runs(),
        card=to_params(CONF.model_card),
    log:
        T.log("release"),
    benchmark:
        T.benchmark("release")
    conda:
        "../../envs/report.yaml"
    script:
        "../scripts/release.py"
