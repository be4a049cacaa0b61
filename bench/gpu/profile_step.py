"""Where a training step's time goes on a GPU (``make gpu-check``): SimCSE's and MED-SE's steps at
batch 512 and 64 on the demo corpus's real lengths, BERT-base (``bench_train.py``'s ``Ours``), each batch
shape's step captured as a CUDA graph (``graphs: true``; ``--methods simcse:graphs=false`` for
the eager step); three steps under ``torch.profiler`` after a warm-up that has stepped every
shape of those three twice (a GPU library plans its kernels, and a step is captured, on a shape's
first sight): the top kernels and operators by device time, the kernel launches and graph replays
per step, and the step's wall time beside the sum of its kernels' times (above 1: kernels ran at
once, e.g. MED-SE's definition encoder on its side stream beside the sentence encoder; below 1:
the device idled, waiting on the host).
Usage: python bench/gpu/profile_step.py --out profile.txt"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch
from torch.autograd import DeviceType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench_train import WARM, Ours, build_model, warm_steps  # noqa: E402

PROFILED = 3  # steps under the profiler


def profiled(model: str, method: str, batch: int, length: int) -> str:
    """One method's profile (see the module), as text."""
    from torch.profiler import ProfilerActivity, profile

    ours = Ours(model, method, batch, length, WARM + PROFILED + 1, "demo")
    warm = warm_steps(ours, range(WARM + 1, WARM + PROFILED + 1), method)
    ours.run(warm)  # every shape of the profiled steps stepped twice
    for _ in range(WARM - warm):
        next(ours.stream)
    cuda = torch.cuda.is_available()
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    t0 = time.perf_counter()
    with profile(activities=activities) as prof:
        ours.run(PROFILED)
    wall = (time.perf_counter() - t0) / PROFILED
    events = prof.key_averages()
    by = "cuda_time_total" if cuda else "cpu_time_total"
    launches = sum(e.count for e in events if e.key.startswith(("cudaLaunchKernel", "cuLaunchKernel")))
    replays = sum(e.count for e in events if e.key.startswith("cudaGraphLaunch"))
    head = (
        f"{method}, batch {batch}: {launches / PROFILED:.0f} kernel launches and "
        f"{replays / PROFILED:.0f} graph replays per step; {1e3 * wall:.1f} ms a step under the profiler"
    )
    if cuda:
        kernels = sum(e.time_range.elapsed_us() for e in prof.events() if _is_kernel(e)) / PROFILED / 1e3
        head += (
            f", its kernels {kernels:.1f} ms in all ({kernels / (1e3 * wall):.2f} of the wall time)"
            if kernels
            else ", its kernels not traced (none seen inside the graph)"
        )
    return f"{head}\n\n{events.table(sort_by=by, row_limit=20, max_name_column_width=60)}\n"


def _is_kernel(event: Any) -> bool:
    """A device-side activity of the trace (a kernel, a copy, a memset), not a host call: the
    profiler lists these beside the operators, with the device's own start and end."""
    return getattr(event, "device_type", None) == DeviceType.CUDA


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--methods", nargs="+", default=["simcse:graphs=true", "medse:graphs=true"])
    ap.add_argument("--batch-sizes", type=int, nargs="+", default=[512, 64])
    ap.add_argument("--size", default="base", help="bench_train's model sizes (tiny: the CPU check)")
    ap.add_argument("--max-length", type=int, default=128)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        model = str(build_model(Path(tmp) / "model", args.size))
        parts = [profiled(model, m, b, args.max_length) for b in args.batch_sizes for m in args.methods]
    args.out.write_text("\n".join(parts))
    print(args.out.read_text())


if __name__ == "__main__":
    main()
