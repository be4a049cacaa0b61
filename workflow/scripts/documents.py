"""Snakemake script: whole notes as documents (pre-training and downstream partitions)."""

from clinsent.warm import hand_off

hand_off()  # where a warm interpreter serves (CLINSENT_WARM), the rest of this script runs in it

from clinsent.corpus.documents import DocumentSettings, build_documents
from clinsent.io import write_json
from clinsent.smk import setup_logging

smk = snakemake  # noqa: F821
log = setup_logging(smk)
stats = build_documents(
    list(smk.input),
    {"pretrain": smk.output.pretrain, "downstream": smk.output.downstream},
    DocumentSettings.from_config(smk.params.documents),
    log.info,
)
write_json(stats, smk.output.stats)
