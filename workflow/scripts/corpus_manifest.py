"""Snakemake script: the corpus manifest (counts per stage, versions, hashes)."""

from logging import Logger
from typing import Any

from clinsent.runner.script import run


def main(smk: Any, log: Logger) -> None:
    from clinsent.corpus.manifest import EntityStage, build_manifest
    from clinsent.io.files import write_json

    inp, p = smk.input, smk.params
    stage = (
        EntityStage(list(inp.entities), inp.terms, inp.coverage, inp.ontology, inp.pack, p.type_ids)
        if "entities" in inp.keys()
        else None
    )  # no method needs entities: no ontology, pack or NER ran
    write_json(build_manifest(inp.ingest, list(inp.sentences), inp.counts, p.shards, p.notes, stage), smk.output[0])


run(snakemake, main)
