"""One process of the distributed tests (tests/train/test_distributed.py), started by torch's own
launcher: ``python -m torch.distributed.run --standalone --nproc-per-node 2 distributed_worker.py
TINY_BERT OUT CASE``.

For each objective case (objective and knobs, the batch of tests/testkit/losses.py, dropout off),
process 0 first takes one process's step on the whole batch (the reference: loss parts and every
gradient), then every process takes its share through :func:`clinsent.train.spread.spread_step`
under DDP; process 0 writes each case's loss and gradient differences to ``OUT`` (JSON lines).
CASE ``train FOLDER STOP_AT`` runs the trainer over the processes (a SIGTERM to process 1 once it
has logged step STOP_AT, where that is not 0) and writes process 0's curve and record.
CASE ``desync`` instead steps twice with DDP's all-reduce skipped (``no_sync``: each process keeps
its own share's gradient) and records whether the parameter check refused to go on."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # testkit

from clinsent.train.processes import Desynchronised, Processes  # noqa: E402
from clinsent.train.spread import Embedder, spread_step, wrap  # noqa: E402

from testkit.losses import loss_and_batch, method_and_encoder, one_pass, take_grads, trainable_params  # noqa: E402

CASES: list[tuple[str, dict[str, Any]]] = [
    ("simcse", {}),
    ("simcse", {"augmentation": "token_shuffle", "dropout": False}),  # a host-side draw per row
    ("simcse", {"mini_batch": 3}),  # each process's share in cached chunks
    ("medse", {"lambda": 0.5}),
    ("medse", {"lambda": 0.5, "grouped": True}),
    ("medse", {"lambda": 0.5, "definition_trainable": False}),
    ("mixcse", {"phi": 0.97, "pooling": "first_last"}),
    ("sup_simcse", {}),
    ("mnr", {}),
    ("ct", {}),
    ("declutr", {}),
    ("mlm", {}),
    ("mlm", {"accumulate": 2}),  # micro-batches of each share
    ("note_category", {}),
]


def _case(tiny_bert: Path, processes: Processes, objective: str, knobs: dict[str, Any]) -> dict[str, Any]:
    method, encoder = method_and_encoder(tiny_bert, objective, **knobs)
    loss, encoder, batch = loss_and_batch(method, encoder, objective)
    loss.use_grouped(bool(knobs.get("grouped")))
    params = trainable_params(loss, encoder)
    reference: dict[str, torch.Tensor] = {}
    grads1: dict[str, torch.Tensor] = {}
    if processes.main:
        reference = one_pass(loss, batch)
        grads1 = take_grads(params)
    ddp = wrap(Embedder(loss, encoder.model, encoder.head))
    s = method.settings
    rows = loss.rows(batch)
    micro = -(-rows // s.accumulate) if s.accumulate > 1 else None
    parts = spread_step(loss, ddp, batch, processes, encoder.device, s.mini_batch, micro)
    grads = take_grads(params)
    processes.check_same(grads, "gradients")
    if not processes.main:
        return {}
    largest = {k: float(g.abs().max()) for k, g in grads1.items()}
    worst = max((float((g - grads[k]).abs().max()) / max(1.0, largest[k]), k) for k, g in grads1.items())
    return {
        "objective": objective,
        "knobs": knobs,
        "loss": {k: [float(v), float(parts[k])] for k, v in reference.items()},
        "parts_equal_keys": sorted(reference) == sorted(parts),
        "worst_gradient": worst[0],
        "worst_tensor": worst[1],
        "largest_gradient": max(largest.values()),
        "moved": sum(1 for v in largest.values() if v > 0),
        "tensors": len(largest),
    }


def _desync(tiny_bert: Path, processes: Processes) -> dict[str, Any]:
    method, encoder = method_and_encoder(tiny_bert, "simcse")
    loss, encoder, batch = loss_and_batch(method, encoder, "simcse")
    params = trainable_params(loss, encoder)
    ddp = wrap(Embedder(loss, encoder.model, encoder.head))
    optimiser = torch.optim.SGD(list(params.values()), lr=0.1)
    refused = ""
    for _ in range(2):
        with ddp.no_sync():  # DDP's all-reduce skipped (as an unused parameter made it, in silence)
            spread_step(loss, ddp, batch, processes, encoder.device)
        optimiser.step()
        optimiser.zero_grad()
    try:
        processes.check_same(dict(params), "parameters")
    except Desynchronised as exc:
        refused = str(exc)
    return {"refused": refused} if processes.main else {}


def _train(tiny_bert: Path, processes: Processes | None, out: Path, stop_at: int) -> dict[str, Any]:
    """The trainer over the processes (tests/train/test_trainer.py's run: SimCSE with token
    shuffles, no dropout, a selection set, checkpoints every 2 steps); with ``stop_at``, process 1
    gets a SIGTERM once its step ``stop_at`` is logged."""
    import os
    import signal

    from clinsent.data.batching import Candidate, plan_batches
    from clinsent.data.plan import PlanData
    from clinsent.train.loop import Preempted
    from clinsent.train.trainer import train

    from testkit.trainer import corpus as _corpus
    from testkit.trainer import method as _method
    from testkit.trainer import sts as _sts

    def log(message: str) -> None:
        if stop_at and processes and processes.rank == 1 and message.startswith(f"progress: step {stop_at}/"):
            os.kill(os.getpid(), signal.SIGTERM)

    sentences, entities = _corpus()
    method = _method("simcse", **TRAIN_KNOBS)
    cands = [Candidate(int(r.sent_id), (0,), (r.term_id,)) for r in entities.itertuples()]
    plan = plan_batches(cands, "replace", method.settings.batch_size, method.settings.steps, 0)
    try:
        result = train(
            method,
            str(tiny_bert),
            out / "model",
            {"sel": _sts("sel")},
            "sel",
            data=PlanData(plan, sentences, None),
            log=log,
            checkpoint_dir=out / "model.ckpt",
            progress_every=1,
            processes=processes,
        )
    except Preempted as exc:
        return {"preempted": str(exc)}
    from clinsent.safety.exclusive import _RUN, held

    locks = [str(p) for p in [*held(), *_RUN]]  # none left held by a process of the job, no results lock
    if processes and not processes.main:
        return {}
    return {"curve": result.curve.to_dict("list"), "info": result.info, "locks": locks}


TRAIN_KNOBS = {"augmentation": "token_shuffle", "dropout": False, "steps": 6, "checkpoint_every": 2}


def main(tiny_bert: str, out: str, case: str, *extra: str) -> None:
    torch.set_num_threads(1)
    processes = Processes.join()
    rows = []
    if case == "desync":
        rows.append(_desync(Path(tiny_bert), processes))
    elif case == "train":
        rows.append(_train(Path(tiny_bert), processes, Path(extra[0]), int(extra[1])))
    else:
        for objective, knobs in CASES:
            rows.append(_case(Path(tiny_bert), processes, objective, knobs))
    if processes.main:
        Path(out).write_text("".join(json.dumps(r) + "\n" for r in rows))
    processes.close()


if __name__ == "__main__":
    main(*sys.argv[1:])
