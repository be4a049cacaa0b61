"""Snakemake script: train one method x base model x seed and keep the selected step (in this
process, or over training.processes x training.nodes processes started by torch's launcher)."""

from logging import Logger
from typing import Any

from clinsent.runner.script import run


def main(smk: Any, log: Logger) -> None:
    import torch

    from clinsent.io.files import write_csv, write_json
    from clinsent.release import card as model_card
    from clinsent.train.job import TrainJob
    from clinsent.train.launch import launch
    from clinsent.train.loop import Preempted

    job = TrainJob.of(smk)
    torch.set_num_threads(smk.threads)  # the rule's `threads` (capped at --cores; sbatch --cpus-per-task)
    try:
        result = launch(job, log.info) if job.spread() else job.run(log.info)
    except Preempted as exc:  # SIGTERM (Slurm preemption or time limit) or Ctrl-C: checkpointed; a rerun resumes
        log.warning("%s", exc)
        raise SystemExit(128 + exc.signum) from None
    model_card.write(
        smk.output.model,
        model_card.render(result.info, result.curve, job.reference(), smk.params.base_model, smk.params.card.value),
    )
    write_csv(result.curve, smk.output.curve)
    write_json(result.info, smk.output.selection)


run(snakemake, main)
