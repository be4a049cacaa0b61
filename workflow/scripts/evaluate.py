"""Snakemake script: metrics of one eval set's embeddings."""
from clinsent.embed import read_embeddings
from clinsent.evaluation.evaluate import evaluate_embeddings
from clinsent.evaluation.sts_data import read_eval_set
from clinsent.io import write_json
from clinsent.smk import setup_logging

smk = snakemake  # noqa: F821
log = setup_logging(smk)
sts = read_eval_set(smk.wildcards.eval_set, smk.params.eval_set)
metrics = evaluate_embeddings(sts, *read_embeddings(smk.input.embeddings), positive_share=smk.params.positive_share)
log.info("%s", metrics)
write_json(metrics, smk.output[0])
