"""Benchmark the healthcare-LM paper's document work (not part of the tests).

1. Training steps: ours (the trainer's loop: batch prepared on the prefetching thread, the
   method's loss module) for ``mlm``, ``declutr`` and ``note_category`` beside a plain
   transformers MLM step (``AutoModelForMaskedLM`` + ``DataCollatorForLanguageModeling`` + AdamW,
   tokenized inline) on the same model, documents and batch (``--batch`` documents of
   ``--length`` tokens), interleaved over ``--rounds`` rounds; min and median seconds per step and
   the ratio ours / plain. DeCLUTR's step encodes 2 anchors and 4 positives per document (spans
   of ``--max-span`` words), so it does more work than one MLM pass: tokens per step are printed.
2. Analysis tasks: each ``class_similarity``, ``class_alignment``, ``similarity_graph`` and
   ``kmeans_clusters`` on ``--docs`` x 1, 10, 100 clustered random documents (``--dim``), in a
   fresh process each: wall seconds of one scoring, and the peak memory allocated during a second
   one (tracemalloc: numpy reports its buffers to it; the inputs are allocated before), beside a
   plain dense reference (the n x n cosine matrix and its mean, numpy) where it fits
   (``--dense-max`` documents).

Figures go to ``bench/results/documents.{json,md}``.

Usage: python bench/bench_documents.py [--size small] [--batch 8] [--length 512] [--rounds 5]
       [--docs 500] [--scales 1 10 100] [--dim 768] [--skip-steps] [--skip-analysis]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))

from bench_train import SIZES, build_model  # noqa: E402

WORDS = (
    "patient admitted with chest pain shortness of breath fever cough renal failure heart rate blood pressure "
    "stable improved overnight medications reviewed plan discussed family follow up clinic nursing assessment "
    "radiology impression no acute process"
).split()


def documents(n: int, words: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    texts = [" ".join(rng.choice(WORDS, words)) for _ in range(n)]
    return pd.DataFrame(
        {
            "row_id": np.arange(n),
            "category": [["Nursing", "Radiology", "Physician"][i % 3] for i in range(n)],
            "n_words": words,
            "text": texts,
        }
    )


class Ours:
    def __init__(
        self, model: str, objective: str, knobs: dict[str, Any], docs: pd.DataFrame, batch: int, length: int
    ) -> None:
        from clinsent.config.declare import build
        from clinsent.data.documents import DocumentData
        from clinsent.methods import METHODS
        from clinsent.models.base import load_transformer
        from clinsent.models.encoder import Encoder
        from clinsent.optimisation import pick_device
        from clinsent.train.loop import MethodLoop

        cls = METHODS.get(objective)
        self.method = cls(
            build(cls.settings_class, {"batch_size": batch, "max_length": length, "steps": 10_000, **knobs})
        )
        device = pick_device()
        t = load_transformer(model, length)
        enc = Encoder(t.auto_model, t.tokenizer, self.method.settings.pooling, 1, length, device)
        self.data = DocumentData(docs, batch, 0)
        self.loop = MethodLoop(self.method, enc, 0, self.data)
        self.step_no = 0
        self.device = device
        self.tokens = 0

    def run(self, n: int) -> float:
        from clinsent.train.prefetch import prefetch

        steps = range(self.step_no + 1, self.step_no + n + 1)
        self.step_no += n
        batches = prefetch(lambda k: self.loop.prepare(self.data, k), steps, depth=2)
        t0 = time.perf_counter()  # waits for the prefetched batches too, as the trainer does
        for _, batch in batches:
            self.loop.step(batch)
        if self.device.type == "cuda":
            torch.cuda.synchronize()
        seconds = time.perf_counter() - t0
        self.tokens = int(
            sum(
                int(v["attention_mask"].sum())
                for v in batch.values()  # the last batch, untimed
                if isinstance(v, dict) and "attention_mask" in v
            )
        )
        return seconds / n


class PlainMLM:
    """transformers' own continued-MLM step: the collator masks, the model computes its loss."""

    def __init__(self, model: str, docs: pd.DataFrame, batch: int, length: int) -> None:
        from transformers import AutoModelForMaskedLM, AutoTokenizer, DataCollatorForLanguageModeling

        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.tok = AutoTokenizer.from_pretrained(model)
        self.model = AutoModelForMaskedLM.from_pretrained(model).to(self.device)
        self.collator = DataCollatorForLanguageModeling(self.tok, mlm_probability=0.15)
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=1e-5)
        self.texts = docs["text"].tolist()
        self.batch, self.length, self.k = batch, length, 0

    def run(self, n: int) -> float:
        from clinsent.models.encoder import autocast

        t0 = time.perf_counter()
        for _ in range(n):
            texts = [self.texts[(self.k + i) % len(self.texts)] for i in range(self.batch)]
            self.k += self.batch
            enc = self.tok(texts, truncation=True, max_length=self.length)
            b = self.collator([{"input_ids": ids} for ids in enc["input_ids"]])
            self.model.train()
            with autocast(self.device):
                loss = self.model(**{k: v.to(self.device) for k, v in b.items()}).loss
            self.opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
            self.opt.step()
        if self.device.type == "cuda":
            torch.cuda.synchronize()
        return (time.perf_counter() - t0) / n


def bench_steps(args: argparse.Namespace, tmp: Path) -> list[dict[str, Any]]:
    model = str(build_model(tmp / "model", args.size))
    words = max(args.length, 2 * 2 * args.max_span)  # DeCLUTR needs 2 x anchors x max_span words
    docs = documents(max(64, 4 * args.batch), words)
    ours = {
        "mlm": Ours(model, "mlm", {}, docs, args.batch, args.length),
        "declutr": Ours(
            model,
            "declutr",
            {"max_span": args.max_span, "min_span": min(32, args.max_span)},
            docs,
            args.batch,
            args.length,
        ),
        "note_category": Ours(model, "note_category", {}, docs, args.batch, args.length),
    }
    plain = PlainMLM(model, docs, args.batch, args.length)
    times: dict[str, list[float]] = {k: [] for k in [*ours, "plain"]}
    for o in ours.values():  # warm-up (lazy allocations, first-call kernels)
        o.run(1)
    plain.run(1)
    for r in range(args.rounds):
        for name, o in ours.items():
            times[name].append(o.run(args.steps))
            times["plain"].append(plain.run(args.steps))
        print(f"round {r + 1}/{args.rounds}", {k: round(v[-1], 3) for k, v in times.items()}, flush=True)
    rows = []
    for name in ours:
        plain_med = statistics.median(times["plain"])
        rows.append(
            {
                "method": name,
                "median_s": statistics.median(times[name]),
                "min_s": min(times[name]),
                "plain_median_s": plain_med,
                "plain_min_s": min(times["plain"]),
                "ratio_median": statistics.median(times[name]) / plain_med,
                "ratio_min": min(times[name]) / min(times["plain"]),
                "tokens_per_step": ours[name].tokens,
            }
        )
    return rows


ANALYSIS_CHILD = r"""
import json, sys, time, tracemalloc
import numpy as np, pandas as pd
import scipy.sparse.csgraph, sklearn.cluster, sklearn.metrics  # imported first: not in the timing
from clinsent.config.declare import build
from clinsent.tasks import TASKS
n, dim, task, path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
rng = np.random.default_rng(0)
labels = np.array([f"team{i % 7}" for i in range(n)])
x = rng.normal(0, 1, (n, dim)).astype(np.float32)
x[np.arange(n), np.arange(n) % 7] += 4.0
texts = [f"doc {i}" for i in range(n)]
pd.DataFrame({"text": texts, "label": labels, "split": "test"}).to_parquet(path)
if task != "dense":
    cls = TASKS.get(task)
    t = cls(task, build(cls.settings_class, {"path": path}))
    t.data
def run():
    if task == "dense":
        xn = x / np.linalg.norm(x, axis=1, keepdims=True)
        return {"mean": float((xn @ xn.T).mean())}
    return t.score(texts, x)
t0 = time.perf_counter()
run()
seconds = time.perf_counter() - t0
tracemalloc.start()  # a second run for memory: numpy reports its buffers to tracemalloc
run()
peak = tracemalloc.get_traced_memory()[1]
print(json.dumps({"seconds": seconds, "extra_mb": peak / 2**20, "vectors_mb": x.nbytes / 2**20}))
"""


def bench_analysis(args: argparse.Namespace, tmp: Path) -> list[dict[str, Any]]:
    rows = []
    for scale in args.scales:
        n = args.docs * scale
        for task in ("class_similarity", "class_alignment", "similarity_graph", "kmeans_clusters", "dense"):
            if task == "dense" and n > args.dense_max:
                rows.append(
                    {
                        "task": task,
                        "documents": n,
                        "seconds": None,
                        "extra_mb": None,
                        "note": f"n x n float32 = {n * n * 4 / 2**30:.1f} GiB: not run",
                    }
                )
                continue
            proc = subprocess.run(
                [sys.executable, "-c", ANALYSIS_CHILD, str(n), str(args.dim), task, str(tmp / f"docs{n}.parquet")],
                capture_output=True,
                text=True,
            )
            if proc.returncode:
                raise SystemExit(proc.stderr[-3000:])
            res = json.loads(proc.stdout.strip().splitlines()[-1])
            rows.append({"task": task, "documents": n, **res})
            print(rows[-1], flush=True)
    return rows


def _fmt(value: float | None, decimals: int) -> str:
    return "" if value is None else f"{value:.{decimals}f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", choices=list(SIZES), default="small")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--length", type=int, default=512)
    ap.add_argument("--max-span", type=int, default=128)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=1)
    ap.add_argument("--docs", type=int, default=500, help="the 1x document count (the demo: 518 notes)")
    ap.add_argument("--scales", type=int, nargs="+", default=[1, 10, 100])
    ap.add_argument("--dim", type=int, default=768)
    ap.add_argument("--dense-max", type=int, default=20_000)
    ap.add_argument("--skip-steps", action="store_true")
    ap.add_argument("--skip-analysis", action="store_true")
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "documents")
    args = ap.parse_args()
    torch.set_num_threads(max(1, torch.get_num_threads()))
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        steps = [] if args.skip_steps else bench_steps(args, tmp)
        analysis = [] if args.skip_analysis else bench_analysis(args, tmp)
    device = (
        "cuda: " + torch.cuda.get_device_name()
        if torch.cuda.is_available()
        else f"cpu ({torch.get_num_threads()} threads)"
    )
    meta = {"device": device, "python": platform.python_version(), "torch": torch.__version__, **vars(args)}
    meta["out"] = str(meta["out"])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    Path(f"{args.out}.json").write_text(json.dumps({"meta": meta, "steps": steps, "analysis": analysis}, indent=2))
    lines = [
        f"# Document benchmarks ({device})",
        "",
        f"settings: {json.dumps({k: v for k, v in meta.items() if k != 'out'})}",
        "",
    ]
    if steps:
        lines += [
            "| method | median s/step | min s/step | plain MLM median | ratio (median) | ratio (min) | tokens/step |",
            "|---|---|---|---|---|---|---|",
        ]
        lines += [
            f"| {r['method']} | {r['median_s']:.3f} | {r['min_s']:.3f} | {r['plain_median_s']:.3f} | "
            f"{r['ratio_median']:.2f} | {r['ratio_min']:.2f} | {r['tokens_per_step']} |"
            for r in steps
        ]
        lines.append("")
    if analysis:
        lines += [
            "| task | documents | seconds | peak memory beyond the inputs, MB | vectors MB | note |",
            "|---|---|---|---|---|---|",
        ]
        lines += [
            f"| {r['task']} | {r['documents']} | {_fmt(r.get('seconds'), 2)} | {_fmt(r.get('extra_mb'), 0)} | "
            f"{_fmt(r.get('vectors_mb'), 0)} | {r.get('note', '')} |"
            for r in analysis
        ]
    Path(f"{args.out}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
