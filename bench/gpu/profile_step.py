"""Where a training step's time goes on a GPU (``make gpu-check``): SimCSE's step at batch 64 on
the demo corpus's real lengths, BERT-base (``bench_train.py``'s ``Ours``), three steps after three
warm-up steps under ``torch.profiler``: the top kernels and operators by device time, and the
kernel launches per step. Usage: python bench/gpu/profile_step.py --out profile.txt"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench_train import Ours, build_model  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--method", default="simcse")
    ap.add_argument("--batch-size", type=int, default=64)
    args = ap.parse_args()
    from torch.profiler import ProfilerActivity, profile

    with tempfile.TemporaryDirectory() as tmp:
        model = str(build_model(Path(tmp) / "model", "base"))
        ours = Ours(model, args.method, args.batch_size, 128, 10, "demo")
        ours.run(3)  # warm-up
        activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if torch.cuda.is_available() else [])
        with profile(activities=activities) as prof:
            ours.run(3)
    events = prof.key_averages()
    by = "cuda_time_total" if torch.cuda.is_available() else "cpu_time_total"
    launches = sum(e.count for e in events if e.key.startswith(("cudaLaunchKernel", "cuLaunchKernel")))
    table = events.table(sort_by=by, row_limit=20, max_name_column_width=60)
    head = f"{args.method}, batch {args.batch_size}: {launches / 3:.0f} kernel launches per step"
    args.out.write_text(f"{head}\n\n{table}\n")
    print(args.out.read_text())


if __name__ == "__main__":
    main()
