"""Snakemake script: notes -> sentences (ScispaCy + pysbd, offsets into the normalised note)."""
import pandas as pd

from clinsent.corpus.split import SentenceSplitter, split_notes
from clinsent.io import write_parquet
from clinsent.smk import setup_logging

log = setup_logging(snakemake)  # noqa: F821
notes = pd.read_parquet(snakemake.input[0])  # noqa: F821
sentences = split_notes(notes, SentenceSplitter(), snakemake.params.min_words)  # noqa: F821
log.info("%d sentences, %d with >= %d words", len(sentences), int(sentences["kept"].sum()), snakemake.params.min_words)  # noqa: F821
write_parquet(sentences, snakemake.output[0])  # noqa: F821
