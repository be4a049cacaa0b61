"""Snakemake script: one sentence corpus (text lines or a parquet column), sampled -> sentences and stats."""

from logging import Logger
from typing import Any

from clinsent.runner.script import run


def main(smk: Any, log: Logger) -> None:
    from clinsent.corpus.sentences import corpus_stats, read_sentence_corpus
    from clinsent.io.files import write_json, write_parquet

    df, report = read_sentence_corpus(smk.wildcards.sentence_corpus, smk.params.entry)
    report["stats"] = corpus_stats(df)
    report["per_file"] = [corpus_stats(df[df["source"] == i]) for i in range(len(report["files"]))]
    log.info(
        "sentence corpus %s: %d of %d sentences kept", smk.wildcards.sentence_corpus, len(df), report["sentences_read"]
    )  # counts only, never text
    write_parquet(df, smk.output.sentences)
    write_json(report, smk.output.stats)


run(snakemake, main)
