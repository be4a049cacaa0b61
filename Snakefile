# clinsent: notes -> sentences -> entities -> definitions -> batch plans -> models
#           -> embeddings -> metrics -> tables and figures.
# Run: snakemake --cores 1 --resources gpu=1 all   (see README.md)
from snakemake.utils import min_version, validate

min_version("9.0")


configfile: "config/config.yaml"


validate(config, "config/schema.yaml")


include: "workflow/rules/common.smk"
include: "workflow/rules/definitions.smk"
include: "workflow/rules/corpus.smk"
include: "workflow/rules/batching.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/embed.smk"
include: "workflow/rules/evaluate.smk"
include: "workflow/rules/report.smk"


rule all:
    input:
        rules.report.output,
        rules.corpus_stats.output,
        rules.corpus_manifest.output,
    default_target: True
