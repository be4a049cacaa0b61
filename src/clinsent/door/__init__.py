"""The door of a run: a config (a file, or Snakemake's mapping) read, completed, validated and
planned, in one function, :func:`clinsent.door.open.open_plan`; its passes (the base
underneath: :mod:`.overlay`; the benchmark's models and missing optional sets: :mod:`.expansion`;
the schema: :mod:`.validate`) live here and nowhere else."""
