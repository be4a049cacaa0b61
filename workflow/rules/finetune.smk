# The fine-tuned setting (BioSimCSE): each trained run fine-tuned on a `finetune` entry's train
# split, the epoch picked on its validation set, scored on its test set; and the cross-encoder
# baseline from each base model on the same splits. One job per (run, entry, seed): a job's
# input is the trained model, so retraining a run reruns exactly its fine-tunes.


rule finetune:
    """Fine-tune one trained run on one entry's train split; test metrics of the best validation epoch."""
    input:
        IN("finetune"),
    output:
        *OUT("finetune"),
    params:
        finetune=lambda wc: PLAN.finetune_params(wc.finetune),
    log:
        T.log("finetune"),
    benchmark:
        T.benchmark("finetune")
    conda:
        "../../envs/train.yaml"
    threads: CONF.training.threads
    resources:
        gpu=1,
        mem_mb=8000,
    script:
        "../scripts/finetune.py"


rule cross_encoder:
    """Fine-tune sentence-transformers' CrossEncoder from one base model on one entry's splits."""
    input:
        IN("cross_encoder"),
    output:
        *OUT("cross_encoder"),
    params:
        finetune=lambda wc: PLAN.finetune_params(wc.finetune),
        base_model=lambda wc: CONF.base_models[wc.base_model],
    log:
        T.log("cross_encoder"),
    benchmark:
        T.benchmark("cross_encoder")
    conda:
        "../../envs/train.yaml"
    threads: CONF.training.threads
    resources:
        gpu=1,
        mem_mb=8000,
    script:
        "../scripts/cross_encoder.py"
