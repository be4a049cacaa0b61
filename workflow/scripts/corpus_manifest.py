"""Snakemake script: the corpus manifest (counts per stage, versions, hashes)."""

from clinsent.warm import hand_off

hand_off()  # where a warm interpreter serves (CLINSENT_WARM), the rest of this script runs in it

from clinsent.corpus.manifest import EntityStage, build_manifest
from clinsent.io import write_json
from clinsent.smk import setup_logging

smk = snakemake  # noqa: F821
setup_logging(smk)
inp, p = smk.input, smk.params
stage = (
    EntityStage(list(inp.entities), inp.terms, inp.coverage, inp.ontology, inp.pack, p.type_ids)
    if "entities" in inp.keys()
    else None
)  # no method needs entities: no ontology, pack or NER ran
write_json(build_manifest(inp.ingest, list(inp.sentences), inp.counts, p.shards, p.notes, stage), smk.output[0])
