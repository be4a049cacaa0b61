"""Snakemake script: metrics of one eval set's embeddings."""
from clinsent.embed import read_embeddings
from clinsent.evaluation.evaluate import evaluate_embeddings
from clinsent.evaluation.sts_data import read_sts
from clinsent.io import write_json
from clinsent.smk import setup_logging

smk = snakemake  # noqa: F821
log = setup_logging(smk)
e = smk.params.eval_set
sts = read_sts(smk.wildcards.eval_set, e["path"], e["format"], e.get("gold"), e.get("scale_max", 5.0))
metrics = evaluate_embeddings(sts, *read_embeddings(smk.input.embeddings), positive_share=smk.params.positive_share)
log.info("%s", metrics)
write_json(metrics, smk.output[0])
