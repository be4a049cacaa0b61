"""Snakemake script: notes (csv/csv.gz, .txt folder or parquet) -> N note shards, streamed."""

from logging import Logger
from typing import Any

from clinsent.runner.script import run


def main(smk: Any, log: Logger) -> None:
    from clinsent.corpus.notes import NotesSpec, ReadStats, iter_notes
    from clinsent.corpus.shards import scatter_notes
    from clinsent.io.files import write_json

    spec, stats = NotesSpec.from_config(smk.params.notes), ReadStats()
    per_shard = scatter_notes(iter_notes(spec, stats), list(smk.output.shards), source=spec.path)
    log.info("read %s; notes per shard %s; notes per category %s", stats.as_dict(), per_shard, stats.categories)
    write_json(
        {
            **stats.as_dict(),
            "category_counts": stats.categories,
            "notes_per_shard": per_shard,
            "source": spec.path,
            "format": spec.format,
        },
        smk.output.stats,
    )


run(snakemake, main)
