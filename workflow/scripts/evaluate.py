"""Snakemake script: metrics of one eval set's embeddings (after the method's post-processing)."""
from clinsent.embed import read_embeddings
from clinsent.io import write_json
from clinsent.postprocess.apply import postprocess
from clinsent.smk import setup_logging
from clinsent.tasks.config import task_from_params

smk = snakemake  # noqa: F821
log = setup_logging(smk)
task = task_from_params(smk.wildcards.eval_set, smk.params.eval_set)
texts, vectors = read_embeddings(smk.input.embeddings)
vectors = postprocess(vectors, smk.params.postprocess, seed=int(smk.wildcards.seed),
                      whitening_dims=smk.params.whitening_dims)
metrics = task.score(texts, vectors)
log.info("task=%s postprocess=%s %s", task.name, smk.params.postprocess, metrics)
write_json({**metrics, "postprocess": smk.params.postprocess}, smk.output[0])
