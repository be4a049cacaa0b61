"""Snakemake script: a seeded sample of the notes' word n-grams, as salted hashes."""

from clinsent.warm import hand_off

hand_off()  # where a warm interpreter serves (CLINSENT_WARM), the rest of this script runs in it

import pyarrow.parquet as pq

from clinsent.phi import sample_ngrams
from clinsent.smk import setup_logging

smk = snakemake  # noqa: F821
log = setup_logging(smk)
texts = (t for path in smk.input for t in pq.read_table(path, columns=["text"]).column("text").to_pylist())
p = smk.params
sample = sample_ngrams(texts, p.ngram, p.sample, p.seed, notes=p.notes)
log.info("%d n-grams of %d words sampled", len(sample.hashes), p.ngram)
sample.save(smk.output[0])
