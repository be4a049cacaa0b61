"""The glue between Snakemake and the package: a job script's start, Snakemake helpers, the warm
interpreter, offline mode and progress lines."""
