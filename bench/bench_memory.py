"""Peak memory of one training step at a large batch, with and without ``mini_batch`` (GradCache
chunks, :mod:`clinsent.train.chunked`), each setting in a process of its own (a process's peak
resident size only grows, so two settings in one process would hide the second's).

Each child builds the trainer's loop (:class:`clinsent.train.loop.MethodLoop`, as
``bench_train.py``'s ``Ours``) on the bench's random BERT and sentences that fill
``--max-length`` tokens, takes one step to warm up (AdamW's states are allocated then), then
measures ``--steps`` steps: on the CPU the peak resident set size (``ru_maxrss``) and its rise
over the step (the process's size before it: weights, optimiser states, the tokenizer);
on CUDA ``torch.cuda.max_memory_allocated`` above what was allocated before the step. It prints
one JSON line; the parent prints a table with the ratio of each ``mini_batch`` setting to the
one-pass step of the same method, and writes ``bench/results/memory.{json,md}``
(``bench/results/cuda/`` on CUDA).

Defaults: BioSimCSE's batch, 512 x 128 tokens, with and without ``mini_batch: 32``; the small
model on the CPU (BERT-base at batch 32 already peaks near 22 GB of a 24 GB machine), BERT-base
on CUDA.

Usage: python bench/bench_memory.py [--methods simcse sup_simcse] [--batch-size 512]
       [--max-length 128] [--mini-batches 0 32] [--size small|base|tiny] [--steps 1]
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def rss_mb() -> float:
    """This process's current resident set size, MiB (Linux /proc)."""
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * resource.getpagesize() / 2**20


def child(args: argparse.Namespace) -> dict[str, Any]:
    import torch

    sys.path.insert(0, str(Path(__file__).parent))
    from bench_train import Ours, build_model

    variant = args.method + (f":mini_batch={args.mini_batch}" if args.mini_batch else "")
    with tempfile.TemporaryDirectory() as tmp:
        model = args.model or str(build_model(Path(tmp) / "model", args.size))
        ours = Ours(
            model, variant, args.batch_size, args.max_length, args.steps + 1, "full"
        )  # sentences fill the length
        resident = rss_mb()  # the model, its tokenizer and the training data, before any step
        ours.run(1)  # warm-up: AdamW's states, the allocator's pools
        cuda = ours.device.type == "cuda"
        if cuda:
            torch.cuda.synchronize()
            before = torch.cuda.memory_allocated() / 2**20
            torch.cuda.reset_peak_memory_stats()
        before_rss = rss_mb()
        seconds = ours.run(args.steps)
        peak_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        out = {
            "method": args.method,
            "mini_batch": args.mini_batch or None,
            "device": str(ours.device),
            "model": args.model or f"random BERT-{args.size}",
            "batch_size": args.batch_size,
            "max_length": args.max_length,
            "seconds_per_step": round(seconds, 3),
            "resident_rss_mb": round(resident, 1),
            "peak_rss_mb": round(peak_rss, 1),
            "step_rss_mb": round(peak_rss - before_rss, 1),
            "after_warmup_rss_mb": round(before_rss, 1),
            "gpu": torch.cuda.get_device_name(0) if cuda else None,
        }
        if cuda:
            out["peak_gpu_mb"] = round(torch.cuda.max_memory_allocated() / 2**20, 1)
            out["step_gpu_mb"] = round(out["peak_gpu_mb"] - before, 1)
        return out


def run_child(args: Any, method: str, mb: int, size: str) -> dict[str, Any]:
    """One method and one ``mini_batch`` measured in a process of its own (its peaks its own)."""
    cmd = [
        sys.executable,
        __file__,
        *("--method", method, "--mini-batch", str(mb), "--batch-size", str(args.batch_size)),
        *("--max-length", str(args.max_length), "--size", size, "--steps", str(args.steps)),
        *(["--model", args.model] if args.model else []),
    ]
    t0 = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        print(f"{method} mini_batch {mb or '-'}: failed (exit {done.returncode})\n{done.stderr[-2000:]}", flush=True)
        return {"method": method, "mini_batch": mb or None, "failed": done.returncode}
    run = dict(json.loads(done.stdout.splitlines()[-1]))
    print(json.dumps(run), f"({time.perf_counter() - t0:.0f} s with start-up)", flush=True)
    return run


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--methods", nargs="+", default=["simcse", "sup_simcse"])
    ap.add_argument("--batch-size", type=int, default=512)
    ap.add_argument("--max-length", type=int, default=128)
    ap.add_argument("--mini-batches", nargs="+", type=int, default=[0, 32], help="0: one pass")
    sizes = ["tiny", "small", "base"]
    ap.add_argument(
        "--size", choices=sizes, default=None, help="the random BERT (default: base on CUDA, small on CPU)"
    )
    ap.add_argument("--model", default=None, help="a base model (hub id or folder) instead of a random one")
    ap.add_argument("--steps", type=int, default=1, help="steps measured after the warm-up step")
    ap.add_argument("--out", default=None)
    ap.add_argument("--render", default=None, help="rewrite memory.md from this memory.json, measuring nothing")
    ap.add_argument("--method", help=argparse.SUPPRESS)  # a child: one method and one setting
    ap.add_argument("--mini-batch", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.method:
        print(json.dumps(child(args)), flush=True)
        return
    if args.render:
        print(render(Path(args.render)))
        return
    import torch

    cuda = torch.cuda.is_available()
    size = args.size or ("base" if cuda else "small")
    out = Path(args.out or REPO / "bench" / "results" / ("cuda" if cuda else ""))
    runs = [run_child(args, method, mb, size) for method in args.methods for mb in args.mini_batches]
    meta = {
        "python": sys.version.split()[0],
        "torch": torch.__version__,
        "platform": platform.platform(),
        "gpu": torch.cuda.get_device_name(0) if cuda else None,
        "model": args.model or f"random BERT-{size}",
        "steps": args.steps,
    }
    out.mkdir(parents=True, exist_ok=True)
    (out / "memory.json").write_text(json.dumps({"meta": meta, "runs": runs}, indent=2) + "\n")
    print(render(out / "memory.json"))


def render(path: Path) -> str:
    """``memory.md`` beside ``memory.json``, from the runs it holds; returns the table."""
    saved = json.loads(path.read_text())
    runs, meta = saved["runs"], saved["meta"]
    cuda = bool(meta.get("gpu"))
    key = "step_gpu_mb" if cuda else "step_rss_mb"
    lines = [
        "| method | mini_batch | batch x length | s/step | resident RSS MiB | peak RSS MiB | step memory MiB "
        "| peak GPU MiB | step memory / one pass | time / one pass |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in runs:
        if "failed" in r:
            lines.append(f"| {r['method']} | {r['mini_batch'] or '–'} | failed (exit {r['failed']}) |||||||")
            continue
        plain = next(
            (p for p in runs if p["method"] == r["method"] and not p.get("mini_batch") and "failed" not in p), None
        )
        ratio = f"{r[key] / plain[key]:.3f}" if plain and plain.get(key) else "–"
        speed = f"{r['seconds_per_step'] / plain['seconds_per_step']:.2f}" if plain else "–"
        lines.append(
            f"| {r['method']} | {r['mini_batch'] or '–'} | {r['batch_size']} x {r['max_length']} | "
            f"{r['seconds_per_step']} | {r.get('resident_rss_mb', '–')} | {r['peak_rss_mb']} | {r.get(key, '–')} | "
            f"{r.get('peak_gpu_mb', '–')} | {ratio} | {speed} |"
        )
    where = (
        "the peak allocated over the measured steps above what was allocated before them (weights, AdamW's states)"
        if cuda
        else "the peak resident size over the measured steps above the size after the warm-up "
        "step (resident RSS: the model, tokenizer and data before any step)"
    )
    (path.parent / "memory.md").write_text(
        f"Measured on {meta}; one process per row; step memory: {where}.\n\n" + "\n".join(lines) + "\n"
    )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
