"""Where a training step's time goes on a GPU (``make gpu-check``): SimCSE's step at batch 64 on
the demo corpus's real lengths, BERT-base (``bench_train.py``'s ``Ours``), each batch shape's step
captured as a CUDA graph (``graphs: true``; ``--method simcse:graphs=false`` for the eager step);
three steps under ``torch.profiler`` after a warm-up that has stepped every shape of those three
twice (a GPU library plans its kernels, and a step is captured, on a shape's first sight): the
top kernels and operators by device time, and the kernel launches per step.
Usage: python bench/gpu/profile_step.py --out profile.txt"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench_train import WARM, Ours, build_model, warm_steps  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--method", default="simcse:graphs=true")
    ap.add_argument("--batch-size", type=int, default=64)
    args = ap.parse_args()
    from torch.profiler import ProfilerActivity, profile

    with tempfile.TemporaryDirectory() as tmp:
        model = str(build_model(Path(tmp) / "model", "base"))
        ours = Ours(model, args.method, args.batch_size, 128, WARM + 4, "demo")
        warm = warm_steps(ours, range(WARM + 1, WARM + 4))
        ours.run(warm)  # every shape of the profiled steps stepped twice
        for _ in range(WARM - warm):
            next(ours.stream)
        activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if torch.cuda.is_available() else [])
        with profile(activities=activities) as prof:
            ours.run(3)
    events = prof.key_averages()
    by = "cuda_time_total" if torch.cuda.is_available() else "cpu_time_total"
    launches = sum(e.count for e in events if e.key.startswith(("cudaLaunchKernel", "cuLaunchKernel")))
    replays = sum(e.count for e in events if e.key.startswith("cudaGraphLaunch"))
    table = events.table(sort_by=by, row_limit=20, max_name_column_width=60)
    head = (
        f"{args.method}, batch {args.batch_size}: {launches / 3:.0f} kernel launches and "
        f"{replays / 3:.0f} graph replays per step"
    )
    args.out.write_text(f"{head}\n\n{table}\n")
    print(args.out.read_text())


if __name__ == "__main__":
    main()
