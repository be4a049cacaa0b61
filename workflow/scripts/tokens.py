"""Snakemake script: tokenize one training source for one tokenizer and length (clinsent.data.tokens)."""

from logging import Logger
from typing import Any

from clinsent.runner.script import run


def main(smk: Any, log: Logger) -> None:
    from clinsent.config.declare import build
    from clinsent.data.token_sources import TokenJob, describe, tokenize_source
    from clinsent.data.tokens import write_tables
    from clinsent.models.base import load_tokenizer

    job = build(TokenJob, smk.params.spec)  # typed: what the token file is made of
    tokenizer = load_tokenizer(job.model)
    keys, tables, spans = tokenize_source(
        job.layout, smk.input.source, tokenizer, job.max_length, smk.input.get("linked"), log=log.info
    )
    log.info("%s", describe(keys, tables, spans))  # counts only, never text
    write_tables(smk.output[0], keys, tables, spans, meta={"source": smk.wildcards.token_source})


run(snakemake, main)
