# Metrics of one eval set's embeddings by its task (STS: Spearman/Pearson, alignment and
# uniformity; RQE: accuracy at the dev-tuned threshold; ...), after the method's
# post-processing (whitening or BERT-flow, fitted on the eval set's own texts).


rule evaluate:
    """Score one eval set's embeddings."""
    input:
        IN("evaluate"),  # the set's own embeddings (or with embed_from another set's) and its files
    output:
        *OUT("evaluate"),
    params:
        eval_set=lambda wc: PLAN.eval_params(wc.eval_set),
        postprocess=lambda wc: PLAN.run.methods[wc.method].postprocess,
        whitening_dims=lambda wc: PLAN.run.methods[wc.method].whitening_dims,
    log:
        T.log("evaluate"),
    benchmark:
        T.benchmark("evaluate")
    conda:
        "../../envs/train.yaml"  # torch, for BERT-flow
    script:
        "../scripts/evaluate.py"
