"""Snakemake script: one shard's kept sentences -> MedCAT entities (character offsets, CUI, type)."""

from clinsent.warm import hand_off

hand_off()  # where a warm interpreter serves (CLINSENT_WARM), the rest of this script runs in it

from clinsent.ner.annotate import MedCATAnnotator, annotate_shard
from clinsent.smk import setup_logging

smk = snakemake  # noqa: F821
log = setup_logging(smk)
counts = annotate_shard(
    smk.input.sentences,
    smk.output[0],
    MedCATAnnotator(smk.input.pack, smk.params.type_ids),
    log=log.info,
    every=smk.config.get("progress", {}).get("seconds", 30),
)  # not a param
log.info("shard %s: %s", smk.wildcards.shard, counts)
