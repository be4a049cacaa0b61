"""What runs the DAG's jobs, between Snakemake and the package (the repository's ``workflow/``
folder holds the rules and scripts; this package is the code they call): how a job script
starts (:mod:`.script`), the Snakefile's helpers (:mod:`.smk`: logging, the run's set-up,
one-line config errors), the warm interpreter (:mod:`.warm`) and the raw inputs' key files
(:mod:`.staleness`)."""
