"""Snakemake script: train one method x base model x seed and keep the selected step."""

from logging import Logger
from typing import Any

from clinsent.runner.script import run


def main(smk: Any, log: Logger) -> None:
    import torch

    from clinsent.io.files import write_csv, write_json
    from clinsent.methods.config import method_from_params
    from clinsent.release import card as model_card
    from clinsent.tasks.config import task_from_params
    from clinsent.train.loop import Preempted
    from clinsent.train.trainer import steps_from_epochs, train

    torch.set_num_threads(smk.threads)  # the rule's `threads` (capped at --cores; sbatch --cpus-per-task)
    seed = int(smk.wildcards.seed)
    method = method_from_params(smk.params.method)  # typed: the objective's settings, the runs its loss loads
    eval_sets = {name: task_from_params(name, p) for name, p in smk.params.eval_sets.items()}
    data = method.data_need().load(dict(smk.input.items()), seed) if method.trains else None
    method = steps_from_epochs(method, data)  # epochs over training rows: steps from the rows read
    try:
        result = train(
            method,
            smk.params.base_model,
            smk.output.model,
            eval_sets,
            smk.params.selection_set,
            data=data,
            seed=seed,
            log=log.info,
            checkpoint_dir=smk.params.checkpoint_dir,
            progress_every=smk.params.progress.value.train_steps,  # logs only: untracked params
            progress_seconds=smk.params.progress.value.train_seconds,
            tracking=list(smk.params.tracking.value),  # event files beside the run: untracked too
            eval_max_length=smk.params.eval_max_length,
            notes=smk.params.notes,
        )
    except Preempted as exc:  # SIGTERM (Slurm preemption or time limit): checkpointed; a retry resumes
        log.warning("%s", exc)
        raise SystemExit(143) from None
    model_card.write(
        smk.output.model,
        model_card.render(result.info, result.curve, method.reference, smk.params.base_model, smk.params.card.value),
    )
    write_csv(result.curve, smk.output.curve)
    write_json(result.info, smk.output.selection)


run(snakemake, main)
