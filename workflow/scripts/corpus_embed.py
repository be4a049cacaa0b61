"""Snakemake script: embed one configured corpus (corpus_embeddings.<name>) with a trained run, in chunks."""

from logging import Logger
from typing import Any

from clinsent.workflow.script import run


def main(smk: Any, log: Logger) -> None:
    from pathlib import Path

    import torch

    from clinsent.embedding.corpus import EmbedOptions, embed_corpus
    from clinsent.embedding.sharded import gather_shards

    torch.set_num_threads(smk.threads)
    p = smk.params.entry
    if "parts" in smk.input.keys():  # a sharded corpus: join the parts, in shard order
        rows = gather_shards([Path(x) for x in smk.input.parts], Path(smk.output[0]), private=p["private"])
        log.info("joined %s parts: %s rows", len(smk.input.parts), rows)
        raise SystemExit(0)
    from clinsent.tasks.config import task_from_params

    options = EmbedOptions.from_entry(
        p, results=smk.params.results.value, memory=smk.params.memory.value, shard=int(smk.wildcards.get("part", 0))
    )
    quality = task_from_params(p["quality_set"], p["quality_task"]) if "quality_task" in p else None
    figures = embed_corpus(
        Path(smk.input.model), Path(smk.input.texts), Path(smk.output[0]), options, log=log.info, quality_set=quality
    )
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
