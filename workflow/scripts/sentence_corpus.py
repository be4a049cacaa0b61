"""Snakemake script: one sentence corpus (text lines or a parquet column), sampled -> sentences and stats."""

from clinsent.warm import hand_off

hand_off()  # where a warm interpreter serves (CLINSENT_WARM), the rest of this script runs in it

from clinsent.corpus.sentences import corpus_stats, read_sentence_corpus
from clinsent.io import write_json, write_parquet
from clinsent.smk import setup_logging

smk = snakemake  # noqa: F821
log = setup_logging(smk)
df, report = read_sentence_corpus(smk.wildcards.sentence_corpus, smk.params.entry)
report["stats"] = corpus_stats(df)
report["per_file"] = [corpus_stats(df[df["source"] == i]) for i in range(len(report["files"]))]
log.info(
    "sentence corpus %s: %d of %d sentences kept", smk.wildcards.sentence_corpus, len(df), report["sentences_read"]
)  # counts only, never text
write_parquet(df, smk.output.sentences)
write_json(report, smk.output.stats)
