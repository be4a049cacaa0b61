"""Snakemake script: train one method x base model x seed and keep the selected step."""
import pandas as pd
import torch

from clinsent.evaluation.sts_data import read_eval_set
from clinsent.io import write_csv, write_json
from clinsent.smk import setup_logging
from clinsent.train.settings import TrainSettings
from clinsent.train.trainer import train

smk = snakemake  # noqa: F821
log = setup_logging(smk)
torch.set_num_threads(smk.threads)  # the rule's `threads` (capped at --cores; sbatch --cpus-per-task)
settings = TrainSettings.from_config(smk.params.settings, {}, int(smk.wildcards.seed))
eval_sets = {name: read_eval_set(name, e) for name, e in smk.params.eval_sets.items()}
trained = settings.objective != "none"
result = train(
    smk.params.base_model, settings, smk.output.model, eval_sets, smk.params.selection_set,
    plan=pd.read_parquet(smk.input.plan) if trained else None,
    sentences=pd.read_parquet(smk.input.sets, columns=["sent_id", "text"]) if trained else None,
    entities=pd.read_parquet(smk.input.linked) if settings.objective == "medse" else None,
    log=log.info, checkpoint_dir=smk.params.checkpoint_dir,
)
write_csv(result.curve, smk.output.curve)
write_json(result.info, smk.output.selection)
