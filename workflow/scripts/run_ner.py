"""Snakemake script: kept sentences -> MedCAT entities (character offsets, CUI, type)."""
import pandas as pd

from clinsent.io import write_parquet
from clinsent.ner.annotate import MedCATAnnotator
from clinsent.smk import setup_logging

log = setup_logging(snakemake)  # noqa: F821
sentences = pd.read_parquet(snakemake.input.sentences, columns=["sent_id", "text", "kept"])  # noqa: F821
annotator = MedCATAnnotator(snakemake.input.pack, snakemake.params.type_ids)  # noqa: F821
entities = annotator.annotate_frame(sentences[sentences["kept"]])
log.info("%d entities in %d sentences", len(entities), entities["sent_id"].nunique())
write_parquet(entities, snakemake.output[0])  # noqa: F821
