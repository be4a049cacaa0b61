"""Snakemake script: the user's MedCAT pack -> a copy restricted to the kept UMLS types."""

from clinsent.warm import hand_off

hand_off()  # where a warm interpreter serves (CLINSENT_WARM), the rest of this script runs in it

from clinsent.io import write_json
from clinsent.ner.pack import slim_pack
from clinsent.smk import setup_logging

smk = snakemake  # noqa: F821
log = setup_logging(smk)
stats = slim_pack(smk.input[0], smk.params.type_ids, smk.output.pack)
log.info("slim pack: %s", stats)
write_json(stats, smk.output.stats)
