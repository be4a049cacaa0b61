#!/usr/bin/env bash
# Run by Snakemake after it creates the corpus conda environment (--sdm conda).
# scispacy 0.6.2 pins numpy<2 and nmslib-metabrainz; we only use its rule tokenizer and pysbd
# sentencizer, which need spacy and pysbd alone (pinned in corpus.yaml), so skip its pins.
set -euo pipefail
python -m pip install --no-deps scispacy==0.6.2
