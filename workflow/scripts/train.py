"""Snakemake script: train one method x base model x seed and keep the selected step."""

from clinsent.warm import hand_off

hand_off()  # where a warm interpreter serves (CLINSENT_WARM), the rest of this script runs in it

from clinsent.gpu_slots import slot_of
from clinsent.smk import setup_logging

smk = snakemake  # noqa: F821
log = setup_logging(smk)
slot_of(smk, log.info)  # this job's GPU (CUDA_VISIBLE_DEVICES), before anything starts CUDA

import torch  # noqa: E402

from clinsent import model_card  # noqa: E402
from clinsent.io import write_csv, write_json  # noqa: E402
from clinsent.methods.config import method_from_params  # noqa: E402
from clinsent.tasks.config import task_from_params  # noqa: E402
from clinsent.train.trainer import Preempted, steps_from_epochs, train  # noqa: E402

torch.set_num_threads(smk.threads)  # the rule's `threads` (capped at --cores; sbatch --cpus-per-task)
seed = int(smk.wildcards.seed)
method = method_from_params(smk.params.method["objective"], smk.params.method["settings"])
method = method.with_run_models(smk.params.method.get("run_models", {}))  # e.g. MixCSE's complementary model
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
        progress_every=smk.config.get("progress", {}).get("train_steps", 0),  # logs only: not params
        progress_seconds=smk.config.get("progress", {}).get("train_seconds", 30),
        tracking=smk.config.get("tracking") or [],  # event files beside the run: not a param either
        eval_max_length=smk.params.eval_max_length,
        notes=smk.params.notes,
    )
except Preempted as exc:  # SIGTERM (Slurm preemption or time limit): checkpointed; a retry resumes
    log.warning("%s", exc)
    raise SystemExit(143) from None
model_card.write(
    smk.output.model,
    model_card.render(
        result.info, result.curve, method.reference, smk.params.base_model, smk.config.get("model_card")
    ),
)
write_csv(result.curve, smk.output.curve)
write_json(result.info, smk.output.selection)
