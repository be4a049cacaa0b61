"""Snakemake script: metrics of one eval set's embeddings (after the method's post-processing)."""

from logging import Logger
from typing import Any

from clinsent.runner.script import run


def main(smk: Any, log: Logger) -> None:
    import time

    from clinsent.embedding.vectors import encode_seconds, read_embeddings
    from clinsent.evaluation.bootstrap import interval_record
    from clinsent.io.files import write_json
    from clinsent.postprocess.apply import postprocess
    from clinsent.tasks.config import task_from_params

    task = task_from_params(smk.wildcards.eval_set, smk.params.eval_set)
    texts, vectors = read_embeddings(smk.input.embeddings)
    vectors = postprocess(
        vectors, smk.params.postprocess, seed=int(smk.wildcards.seed), whitening_dims=smk.params.whitening_dims
    )
    start = time.perf_counter()
    metrics, items = task.score_and_items(texts, vectors)
    seconds = time.perf_counter() - start + (encode_seconds(smk.input.embeddings) or 0.0)  # encoding + scoring
    log.info("task=%s postprocess=%s %s (%.2f s)", task.name, smk.params.postprocess, metrics, seconds)
    intervals = interval_record(items)  # 95%, over the items; the same resamples for every run
    write_json(
        {**metrics, "postprocess": smk.params.postprocess, "seconds": round(seconds, 4), **intervals}, smk.output[0]
    )


run(snakemake, main)
