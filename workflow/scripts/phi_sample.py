"""Snakemake script: a seeded sample of the notes' word n-grams, as salted hashes."""

from logging import Logger
from typing import Any

from clinsent.runner.script import run


def main(smk: Any, log: Logger) -> None:
    import pyarrow.parquet as pq

    from clinsent.phi import sample_ngrams

    texts = (t for path in smk.input for t in pq.read_table(path, columns=["text"]).column("text").to_pylist())
    p = smk.params
    sample = sample_ngrams(texts, p.ngram, p.sample, p.seed, notes=p.notes)
    log.info("%d n-grams of %d words sampled", len(sample.hashes), p.ngram)
    sample.save(smk.output[0])


run(snakemake, main)
