"""Snakemake script: embed one configured corpus (corpus_embeddings.<name>) with a trained run, in chunks."""

from logging import Logger
from typing import Any

from clinsent.runner.script import run


def main(smk: Any, log: Logger) -> None:
    from pathlib import Path

    import torch

    from clinsent.config.declare import build
    from clinsent.config.sections import CorpusEmbeddingEntry
    from clinsent.embedding.corpus import EmbedOptions, embed_corpus
    from clinsent.embedding.sharded import InputRows, gather_shards
    from clinsent.runner.staleness import read_key
    from clinsent.safety.content import content_key

    torch.set_num_threads(smk.threads)
    entry = build(CorpusEmbeddingEntry, smk.params.entry)  # typed: the entry's declaration, as the plan wrote it
    texts = Path(smk.input.texts)
    recorded = read_key(smk.input.get("input_keys", []), texts)  # a raw input's key, as the run recorded it
    input_key = recorded["sha256"] if recorded else None
    if "parts" in smk.input.keys():  # a sharded corpus: join the parts, in shard order, checked against the input
        source = InputRows(texts, input_key or content_key(texts), entry.column, entry.id_column, entry.chunk)
        parts = [Path(x) for x in smk.input.parts]
        rows = gather_shards(parts, Path(smk.output[0]), source, private=entry.private, log=log.info)
        log.info("joined %s parts: %s rows", len(parts), rows)
        raise SystemExit(0)
    from clinsent.tasks.config import quality_task

    options = EmbedOptions.from_entry(
        entry,
        results=smk.params.results.value,
        memory=smk.params.memory.value,
        shard=int(smk.wildcards.get("part", 0)),
        input_key=input_key,
    )
    quality = quality_task(smk.params.entry)  # the quality set's task, rebuilt from its params
    out = Path(smk.output[0])
    figures = embed_corpus(Path(smk.input.model), texts, out, options, log=log.info, quality_set=quality)
    log.info(
        "embedded %s texts (%s now, %s chunks resumed) in %s s (%s per second; peak resident memory %s MB)",
        figures["rows"],
        figures["embedded"],
        figures["resumed_chunks"],
        figures["seconds"],
        figures["sentences_per_second"],
        figures["peak_rss_mb"],
    )


run(snakemake, main)
