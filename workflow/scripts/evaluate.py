"""Snakemake script: metrics of one eval set's embeddings (after the method's post-processing)."""
from clinsent.embed import read_embeddings
from clinsent.evaluation.evaluate import evaluate_embeddings
from clinsent.evaluation.sts_data import read_eval_set
from clinsent.io import write_json
from clinsent.postprocess.apply import postprocess
from clinsent.smk import setup_logging

smk = snakemake  # noqa: F821
log = setup_logging(smk)
sts = read_eval_set(smk.wildcards.eval_set, smk.params.eval_set)
texts, vectors = read_embeddings(smk.input.embeddings)
vectors = postprocess(vectors, smk.params.postprocess, seed=int(smk.wildcards.seed),
                      whitening_dims=smk.params.whitening_dims)
metrics = evaluate_embeddings(sts, texts, vectors, positive_share=smk.params.positive_share)
log.info("postprocess=%s %s", smk.params.postprocess, metrics)
write_json({**metrics, "postprocess": smk.params.postprocess}, smk.output[0])
