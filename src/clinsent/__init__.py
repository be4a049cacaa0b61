"""clinsent: the reference pipeline for clinical sentence embeddings (MED-SE and baselines).

The Snakemake workflow at the repository root calls this package through thin scripts in
``workflow/scripts``; every stage's logic lives in one module here.
"""

from clinsent.process.offline import default_offline

default_offline()  # before any job script or user imports transformers (clinsent.process.offline)

__version__ = "0.1.0"
