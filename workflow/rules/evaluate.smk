# Metrics: Spearman/Pearson of cosine vs gold, alignment and uniformity, after the method's
# post-processing (whitening or BERT-flow, fitted on the eval set's own sentences).


rule evaluate:
    """Score one eval set's embeddings."""
    input:
        embeddings=f"{R}/embeddings/{{method}}/{{base_model}}/seed{{seed}}/{{eval_set}}.parquet",
        eval_files=lambda wc: external(eval_set_files(wc.eval_set)),
    output:
        f"{R}/metrics/{{method}}/{{base_model}}/seed{{seed}}/{{eval_set}}.json",
    params:
        eval_set=lambda wc: config["eval_sets"][wc.eval_set],
        positive_share=config["evaluation"]["positive_share"],
        postprocess=lambda wc: method_cfg(wc.method)["postprocess"],
        whitening_dims=lambda wc: method_cfg(wc.method)["whitening_dims"],
    log:
        f"{LOGS}/evaluate/{{method}}_{{base_model}}_seed{{seed}}_{{eval_set}}.log",
    benchmark:
        f"{BENCH}/evaluate/{{method}}_{{base_model}}_seed{{seed}}_{{eval_set}}.tsv"
    conda:
        "../../envs/train.yaml"  # torch, for BERT-flow
    script:
        "../scripts/evaluate.py"
