"""One training step over 1 and 2 processes on the CPU (gloo): the distributed row of the figures.

    .venv/bin/python bench/bench_processes.py [--steps 20] [--batch-size 32] [--layers 4]

Each row is a run of torch's own launcher (``torchrun --standalone --nproc-per-node W``) over a
random BERT (``--layers`` x 256, the tiny tokenizer's vocabulary), SimCSE at ``--batch-size``
rows of 32 tokens, dropout off, one thread per process: every process embeds its share through
DDP (:mod:`clinsent.train.spread`). Printed and written to ``bench/results/processes.{json,md}``:

- the step's median time (after 3 warm-up steps) at 1 and 2 processes, and their ratio;
- the bytes all-reduced per step (every trainable parameter's gradient, float32: DDP's buckets);
- the all-reduce of that many bytes alone, on the same group (the median of 10), and its share of
  the 2-process step: on one machine's loopback, gloo's cost; what a GPU interconnect costs is
  estimated in docs/performance.md ("Several GPUs in one job").

On 2 cores two processes share the machine, so the 2-process step is not expected to be faster:
the row shows what splitting costs (the gather, the duplicated score, the all-reduce) beside the
work each process does, not a speed-up.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

OUT = Path(__file__).resolve().parent / "results"


def worker(args: argparse.Namespace) -> None:
    """One process of a row (started by torchrun): time the steps, rank 0 writes the figures."""
    import pandas as pd
    import torch
    import torch.distributed as dist
    from transformers import AutoTokenizer, BertConfig, BertModel

    from clinsent.demo.tiny_bert import make_tiny_bert
    from clinsent.losses.simcse import SimCSELoss
    from clinsent.models.encoder import Encoder
    from clinsent.optimisation import Optimisation
    from clinsent.train.processes import Processes
    from clinsent.train.spread import Embedder, spread_step, wrap

    torch.set_num_threads(1)
    spread = Processes.join() if Processes.launched() else None
    rank = spread.rank if spread is not None else 0
    tokenizer_dir = Path(args.scratch) / "tiny"
    if rank == 0 and not tokenizer_dir.exists():
        make_tiny_bert(tokenizer_dir)
    if spread is not None:
        spread.wait()
    tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_dir))
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=256,
        num_hidden_layers=args.layers,
        num_attention_heads=4,
        intermediate_size=1024,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    model = BertModel(config)
    encoder = Encoder(model, tokenizer, "cls", 1, 32, torch.device("cpu"))
    loss = SimCSELoss(encoder, temperature=0.05)
    model.train()
    loss.train()
    texts = [
        f"patient {i} was seen today with a history of disease number {i % 7} and stable vitals" for i in range(512)
    ]
    params = [p for p in model.parameters() if p.requires_grad]
    opt = Optimisation(params, 1e-5, args.steps + 3)
    ddp = wrap(Embedder(loss, model, None)) if spread is not None else None
    times = []
    for step in range(args.steps + 3):
        rows = texts[(step * args.batch_size) % 256 :][: args.batch_size]
        batch = loss.prepare(pd.DataFrame({"text": rows}), torch.Generator().manual_seed(step))
        t0 = time.perf_counter()
        opt.zero_grad()
        if ddp is not None and spread is not None:
            parts = spread_step(loss, ddp, batch, spread, torch.device("cpu"))
            total = torch.stack(list(parts.values())).sum()
        else:
            total = torch.stack(list(loss(batch).values())).sum()
            total.backward()
        opt.apply()
        float(total)
        if step >= 3:
            times.append(time.perf_counter() - t0)
    grad_bytes = sum(p.numel() * 4 for p in params)
    allreduce = None
    if spread is not None:
        flat = torch.zeros(grad_bytes // 4)
        laps = []
        for _ in range(10):
            dist.barrier()
            t0 = time.perf_counter()
            dist.all_reduce(flat)
            laps.append(time.perf_counter() - t0)
        allreduce = statistics.median(laps)
    if rank == 0:
        Path(args.out).write_text(
            json.dumps(
                {
                    "processes": spread.world if spread is not None else 1,
                    "step_seconds": statistics.median(times),
                    "grad_bytes": grad_bytes,
                    "allreduce_seconds": allreduce,
                    "parameters": sum(p.numel() for p in params),
                }
            )
        )
    if spread is not None:
        spread.close()


def row(world: int, args: argparse.Namespace, scratch: Path) -> dict[str, float]:
    out = scratch / f"row{world}.json"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    own = [
        __file__,
        "--worker",
        "--out",
        str(out),
        "--scratch",
        str(scratch),
        "--steps",
        str(args.steps),
        "--batch-size",
        str(args.batch_size),
        "--layers",
        str(args.layers),
    ]
    command = [sys.executable, *own]
    if world > 1:
        command = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={world}", *own]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=1200)
    if done.returncode != 0:
        raise SystemExit(done.stderr[-3000:])
    return dict(json.loads(out.read_text()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    parser.add_argument("--scratch", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return
    with tempfile.TemporaryDirectory() as scratch:
        one, two = row(1, args, Path(scratch)), row(2, args, Path(scratch))
    share = two["allreduce_seconds"] / two["step_seconds"]
    result = {
        "batch_size": args.batch_size,
        "layers": args.layers,
        "hidden": 256,
        "tokens": 32,
        "steps_timed": args.steps,
        "cores": os.cpu_count(),
        "one": one,
        "two": two,
        "ratio_two_to_one": two["step_seconds"] / one["step_seconds"],
        "allreduce_share_of_step": share,
    }
    lines = [
        "# One training step over 1 and 2 processes on the CPU (gloo): `bench/bench_processes.py`",
        "",
        f"SimCSE on a random BERT of {args.layers} x 256 ({one['parameters']:,} parameters), batch {args.batch_size} "
        f"x 32 tokens, dropout off, one thread per process, {os.cpu_count()} cores; median of {args.steps} steps "
        "after 3 warm-up steps.",
        "",
        "| processes | step (s) | ratio to 1 | bytes all-reduced a step | all-reduce alone (s) | share of the step |",
        "|---|---|---|---|---|---|",
        f"| 1 | {one['step_seconds']:.4f} | 1.00 | — | — | — |",
        f"| 2 | {two['step_seconds']:.4f} | {result['ratio_two_to_one']:.2f} | {two['grad_bytes']:,} | "
        f"{two['allreduce_seconds']:.4f} | {share:.1%} |",
        "",
    ]
    OUT.mkdir(exist_ok=True)
    (OUT / "processes.json").write_text(json.dumps(result, indent=2) + "\n")
    (OUT / "processes.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
