"""Snakemake script: the corpus manifest (counts per stage, versions, hashes)."""
from clinsent.corpus.manifest import build_manifest
from clinsent.io import write_json
from clinsent.smk import setup_logging

smk = snakemake  # noqa: F821
setup_logging(smk)
inp, p = smk.input, smk.params
write_json(build_manifest(inp.ingest, list(inp.sentences), list(inp.entities), inp.counts, inp.terms, inp.coverage,
                          inp.ontology, inp.pack, p.shards, p.type_ids, p.notes), smk.output[0])
