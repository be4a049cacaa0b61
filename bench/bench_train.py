"""Benchmark a training step: ours (the trainer's loop, per method) beside a plain
PyTorch + transformers SimCSE step on the same model, batch and length; the row-level methods
(``sup_simcse``, ``mnr``: triplets) beside sentence-transformers' own step on the same triplets
(a ``SentenceTransformer`` with the method's pooling and the library's
``MultipleNegativesRankingLoss``, scale 20, in a plain AdamW loop: the library's trainer needs
``datasets`` and ``accelerate``, which this project does not install).

Both run in one process, interleaved: each round times ``--steps`` steps of ours, then the same
number of the plain step, for every method asked; after ``--rounds`` rounds (at least 5) it
prints the min and median seconds per step of each and their ratio (ours / plain). A ratio above
1 is what the method costs beyond SimCSE (MED-SE's definition encoder, CT's twin) plus our
loop's overhead; for ``simcse`` it is the loop's overhead alone. Ours includes the batch
preparation on the prefetching thread (tokenization, augmentation draws, span masks); the
plain step tokenizes inline. On CUDA both run under bf16 autocast with fused AdamW, and the
report adds, for each side, sentences/s, real (non-pad) tokens/s and the real-token share of the
encoder's input (each pass padded to its longest row, as the tokenizer pads a batch), host syncs
and dispatched operators per step (one step under :class:`clinsent.train.syncs.SyncCounter`),
the FLOP ratio of ours to the reference, step GPU memory (the peak above what was already
allocated when its timed run began: activations, gradients, temporaries; every side's weights and
optimiser state stay resident; the process-wide peak is in the header) and model FLOPs
utilisation on the real tokens (6 x non-embedding parameters per real token, plus attention's
12 x layers x width x length, forward and backward, over the GPU's dense bf16 peak;
``--peak-tflops`` to set it).

Defaults: a BERT-base-sized encoder (12 layers, 768 wide, random weights from a config, so
nothing is downloaded; the packaged MiniLM's BERT tokenizer), batch 32, length 128, the demo
corpus's sentences (``--lengths demo``: real lengths, about 25 tokens on average; MED-SE's
definitions are other demo sentences); ``--lengths full`` makes every sentence fill the length
(the earlier setting, no padding at all). ``simcse:unpad=true`` runs a method on the unpadded
forward (the encoder layers fed the real tokens only: its real-token share is 1 by
construction of the packing, checked in ``tests/models/test_unpadded.py``). Figures go to
``bench/results/train.{json,md}``.

Usage: python bench/bench_train.py [--rounds 5] [--steps 1] [--size base|small|tiny] [--batch-size 64]
       [--lengths demo|full]
       [--methods simcse medse mixcse:instance_weighting=false simcse:augmentation=random_crop]
       (an objective, optionally with knobs after colons; or any base model: --model bert-base-uncased)
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
import yaml

from clinsent.config.sections import MethodConfig, RunConfig, Training, TrainingDataEntry
from clinsent.config.settings import build
from clinsent.data.batching import Candidate, plan_batches
from clinsent.data.plan import PlanData
from clinsent.data.rows import RowsData
from clinsent.methods.config import resolve_method
from clinsent.models.base import load_transformer
from clinsent.models.encoder import Encoder, autocast
from clinsent.optimisation import pick_device
from clinsent.train.loop import MethodLoop
from clinsent.train.prefetch import prefetch, workers_for
from clinsent.train.syncs import SyncCounter

REPO = Path(__file__).resolve().parents[1]
DEMO_SENTENCES = REPO / "resources" / "demo" / "pubmed.demo.sentences.txt"
# the batch columns an encoder reads, and how many passes each gets (SimCSE's two dropout views)
PASSES = {"text": 2, "definition": 1, "anchor": 1, "positive": 1, "negative": 1}
DISEASES = [
    "heart failure",
    "diabetes mellitus",
    "asthma",
    "pneumonia",
    "sepsis",
    "gout",
    "anemia",
    "migraine",
    "hypertension",
    "atrial fibrillation",
    "chronic kidney disease",
    "depression",
]
FILLER = (
    "the patient was seen on the ward today and reported that symptoms had improved overnight with the "
    "current regimen while vital signs remained stable and laboratory values were reviewed with the team "
)
SIZES = {"base": (768, 12, 12, 3072), "small": (256, 4, 4, 1024), "tiny": (64, 2, 2, 128)}
ROW_METHODS = ("sup_simcse", "mnr")  # trained on (anchor, positive, negative) rows
PEAK_TFLOPS = {"H100": 989.0, "H200": 989.0, "A100": 312.0}  # dense bf16


def build_model(path: Path, size: str) -> Path:
    from transformers import AutoTokenizer, BertConfig, BertModel

    from clinsent.demo.tiny_bert import tokenizer_dir

    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir())
    dims = SIZES[size]
    config = BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=dims[0],
        num_hidden_layers=dims[1],
        num_attention_heads=dims[2],
        intermediate_size=dims[3],
        max_position_embeddings=512,
    )
    torch.manual_seed(0)
    BertModel(config, add_pooling_layer=False).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def demo_sentences() -> list[str]:
    """The demo corpus's sentences (real lengths: about 25 tokens on average, a tail to 60)."""
    return [line.strip() for line in DEMO_SENTENCES.read_text(encoding="utf-8").splitlines() if line.strip()]


def corpus(n: int, lengths: str = "demo") -> tuple[pd.DataFrame, pd.DataFrame, list[Candidate]]:
    """``n`` sentences, each with one entity and its definition. ``demo``: the demo corpus's
    sentences in turn (the entity: the sentence's first two words; the definition: another demo
    sentence, as long as a definition); ``full``: every sentence and definition long enough to
    fill the length (the papers' longest case, no padding at all)."""
    sents, ents = [], []
    real = demo_sentences() if lengths == "demo" else []
    for i in range(n):
        d = DISEASES[i % len(DISEASES)]
        if real:
            text = real[i % len(real)]
            span = " ".join(text.split()[:2])
            ents.append((i, 0, 0, len(span), f"T{i}", real[(7 * i + 3) % len(real)]))
        else:
            text = f"Patient {i} has a history of {d} and " + FILLER * 4  # about 150 words: truncated at 128 tokens
            start = text.index(d)
            ents.append(
                (
                    i,
                    0,
                    start,
                    start + len(d),
                    f"T{i}",  # distinct entities: replace can fill any batch
                    f"{d.capitalize()} is a disease; " + FILLER,
                )
            )
        sents.append((i, text))
    sentences = pd.DataFrame(sents, columns=["sent_id", "text"])
    entities = pd.DataFrame(ents, columns=["sent_id", "ent_idx", "start", "end", "term_id", "definition"])
    cands = [Candidate(int(r.sent_id), (0,), (r.term_id,)) for r in entities.itertuples()]
    return sentences, entities, cands


class Tokens:
    """What a step's encoder passes hold, averaged over steps: real (non-pad) tokens, the tokens
    fed (each pass padded to its longest row, as the tokenizer pads a batch), and the sum of
    squared real lengths (attention's cost grows with it)."""

    def __init__(self, real: float, fed: float, squares: float) -> None:
        self.real, self.fed, self.squares = real, fed, squares

    @classmethod
    def of(cls, steps: list[list[list[str]]], tokenizer: Any, length: int, unpadded: bool = False) -> Tokens:
        """``steps``: per step, the texts of each encoder pass; ``unpadded``: the encoder layers
        are fed the real tokens alone (``unpad``, :mod:`clinsent.models.unpadded`)."""
        real = fed = squares = 0.0
        for passes in steps:
            for texts in passes:
                if not texts:
                    continue
                n = [len(ids) for ids in tokenizer(texts, truncation=True, max_length=length)["input_ids"]]
                real += sum(n)
                fed += sum(n) if unpadded else len(n) * max(n)
                squares += sum(k * k for k in n)
        k = max(len(steps), 1)
        return cls(real / k, fed / k, squares / k)

    def flops(self, model_config: Any, non_embedding: int) -> float:
        """Forward and backward FLOPs on the real tokens: 6 x non-embedding parameters per token
        plus attention's 12 x layers x width x length per token (PaLM's count, appendix B)."""
        return (
            6 * non_embedding * self.real
            + 12 * model_config.num_hidden_layers * model_config.hidden_size * self.squares
        )


def non_embedding_parameters(model: Any) -> int:
    embeddings = getattr(model, "embeddings", None)
    skip = {id(p) for p in embeddings.parameters()} if embeddings is not None else set()
    return sum(p.numel() for p in model.parameters() if id(p) not in skip)


class Ours:
    """The trainer's loop for one method: prefetched preparation, then ``MethodLoop.step``."""

    def __init__(self, model: str, variant: str, batch: int, length: int, total_steps: int, lengths: str) -> None:
        method_name, *extra = variant.split(":")
        knobs: dict[str, Any] = {
            "steps": total_steps,
            "batch_size": batch,
            "max_length": length,
            "checkpoint_every": 0,
        }
        knobs.update({k: yaml.safe_load(v) for k, v in (e.split("=", 1) for e in extra)})
        sentences, entities, cands = corpus(max(4 * batch, 64), lengths)
        data: Any
        if method_name in ROW_METHODS:
            knobs["train_data"] = "rows"
            texts = sentences["text"].tolist()
            rows = pd.DataFrame(
                {"anchor": texts, "positive": texts[1:] + texts[:1], "negative": texts[2:] + texts[:2]}
            )
            data = RowsData(rows, batch, seed=0)
        else:
            plan = plan_batches(cands, "replace" if method_name == "medse" else "naive", batch, total_steps, seed=0)
            data = PlanData(plan, sentences, entities if method_name == "medse" else None)
        cfg = RunConfig(training_data={"rows": TrainingDataEntry(format="nli_jsonl", path="rows")})
        entry = build(MethodConfig, {"objective": method_name, **knobs})
        self.method = resolve_method(method_name, entry, Training(), [0], cfg).method
        self.device = pick_device()
        t = load_transformer(model, length)
        t.model.to(self.device)
        s = self.method.settings
        self.encoder = Encoder(t.model, t.tokenizer, s.pooling, s.first_layer, length, self.device)
        self.loop = MethodLoop(self.method, self.encoder, seed=0)
        self.data, self.next_step, self.params = data, 1, sum(p.numel() for p in t.model.parameters())
        self.prep_seconds: list[float] = []  # each prepared batch's time (on the prefetching thread)
        columns = [self.data.batch(step) for step in range(1, total_steps + 1)]  # every step's rows
        self.tokens = Tokens.of(
            [
                [list(rows[c].dropna().astype(str)) for c in PASSES if c in rows for _ in range(PASSES[c])]
                for rows in columns
            ],
            t.tokenizer,
            length,
            unpadded=bool(getattr(self.method.settings, "unpad", False)),
        )

    def prepared(self, step: int) -> dict[str, Any]:
        """A step's batch as the trainer's prefetching thread prepares it, its time recorded."""
        t0 = time.perf_counter()
        batch = self.loop.prepare(self.data, step)
        self.prep_seconds.append(time.perf_counter() - t0)
        return batch

    def counted(self) -> SyncCounter:
        """One more step (its batch prepared first, outside the count) under the sync counter."""
        batch = self.loop.prepare(self.data, self.next_step)
        self.next_step += 1
        with SyncCounter() as counter:
            self.loop.step(batch)
        return counter

    def run(self, n: int) -> float:
        steps = range(self.next_step, self.next_step + n)
        self.next_step += n
        t0 = time.perf_counter()
        workers = workers_for(self.device.type, torch.get_num_threads())  # as the trainer's loop
        for _, batch in prefetch(self.prepared, steps, depth=2, workers=workers):
            self.loop.step(batch)
        if self.device.type == "cuda":
            torch.cuda.synchronize()
        return (time.perf_counter() - t0) / n


class _Reference:
    """A reference step timed n times (``step`` and ``device`` from the subclass)."""

    device: torch.device

    def step(self) -> None:
        raise NotImplementedError

    def counted(self) -> SyncCounter:
        with SyncCounter() as counter:
            self.step()
        return counter

    def run(self, n: int) -> float:
        t0 = time.perf_counter()
        for _ in range(n):
            self.step()
        if self.device.type == "cuda":
            torch.cuda.synchronize()
        return (time.perf_counter() - t0) / n


class PlainSimCSE(_Reference):
    """Unsupervised SimCSE written directly: tokenize, one pass over 2N rows, first-last pooling,
    InfoNCE, AdamW (fused on CUDA), gradient clipping at 1.0."""

    def __init__(self, model: str, batch: int, length: int, lengths: str) -> None:
        from transformers import AutoModel, AutoTokenizer

        from clinsent.models.base import resolve_model

        self.device = pick_device()
        path = resolve_model(model)
        self.tokenizer = AutoTokenizer.from_pretrained(path)
        self.model = AutoModel.from_pretrained(path).to(self.device).train()
        self.optimizer = torch.optim.AdamW(
            self.model.parameters(), lr=3e-5, weight_decay=0.0, fused=self.device.type == "cuda" or None
        )
        self.texts = corpus(batch, lengths)[0]["text"].tolist()
        self.length = length
        self.tokens = Tokens.of([[self.texts, self.texts]], self.tokenizer, length)

    def step(self) -> None:
        enc = self.tokenizer(self.texts, padding=True, truncation=True, max_length=self.length, return_tensors="pt")
        inputs = {k: torch.cat([v, v]).to(self.device) for k, v in enc.items()}
        with autocast(self.device):
            hs = self.model(**inputs, output_hidden_states=True).hidden_states
        mask = inputs["attention_mask"].unsqueeze(-1).float()
        emb = (((hs[1].float() + hs[-1].float()) / 2) * mask).sum(1) / mask.sum(1)
        z1, z2 = F.normalize(emb[: len(self.texts)], dim=-1), F.normalize(emb[len(self.texts) :], dim=-1)
        loss = F.cross_entropy(z1 @ z2.T / 0.05, torch.arange(len(self.texts), device=self.device))
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.optimizer.step()


class PlainMNR(_Reference):
    """sentence-transformers' own step on the same triplets: the library's model (the method's
    pooling), its MultipleNegativesRankingLoss (scale 20), AdamW, gradient clipping at 1.0."""

    def __init__(self, model: str, batch: int, length: int, pooling: str, lengths: str) -> None:
        from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

        from clinsent.models.base import sentence_transformer

        self.device = pick_device()
        self.model = sentence_transformer(load_transformer(model, length), pooling, device=str(self.device))
        self.model.train()
        self.loss = MultipleNegativesRankingLoss(self.model, scale=20.0)
        self.optimizer = torch.optim.AdamW(
            self.model.parameters(), lr=3e-5, weight_decay=0.0, fused=self.device.type == "cuda" or None
        )
        texts = corpus(max(4 * batch, 64), lengths)[0]["text"].tolist()[:batch]
        self.columns = [texts, texts[1:] + texts[:1], texts[2:] + texts[:2]]
        self.tokens = Tokens.of([self.columns], self.model.tokenizer, length)

    def step(self) -> None:
        from sentence_transformers.util import batch_to_device

        features = [batch_to_device(self.model.preprocess(c), self.device) for c in self.columns]
        with autocast(self.device):
            loss = self.loss(features, None)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.optimizer.step()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=1, help="steps timed per round and side")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--max-length", type=int, default=128)
    ap.add_argument(
        "--lengths",
        choices=["demo", "full"],
        default="demo",
        help="demo: the demo corpus's sentences (real lengths, dynamic padding); full: every sentence "
        "fills --max-length (no padding)",
    )
    ap.add_argument("--size", choices=list(SIZES), default="base")
    ap.add_argument("--model", default=None, help="a base model (hub id or folder) instead of a random one")
    ap.add_argument("--methods", nargs="+", default=["simcse", "medse"])
    ap.add_argument("--peak-tflops", type=float, default=None, help="the GPU's dense bf16 peak (MFU)")
    ap.add_argument("--out", default=str(REPO / "bench" / "results"))
    args = ap.parse_args()
    if args.rounds < 5:
        ap.error("--rounds must be at least 5")
    total = (args.rounds + 1) * args.steps + 1  # the warm-up, the timed rounds and one counted step
    with tempfile.TemporaryDirectory() as tmp:
        model = args.model or str(build_model(Path(tmp) / "model", args.size))
        plain = PlainSimCSE(model, args.batch_size, args.max_length, args.lengths)
        ours = {m: Ours(model, m, args.batch_size, args.max_length, total, args.lengths) for m in args.methods}
        # each method's reference: plain SimCSE, or (row methods) sentence-transformers' MNR step
        ref_of = {
            m: f"st_mnr:{ours[m].method.settings.pooling}" if m.split(":")[0] in ROW_METHODS else "plain"
            for m in args.methods
        }
        refs: dict[str, Any] = {"plain": plain}
        refs |= {
            r: PlainMNR(model, args.batch_size, args.max_length, r.split(":")[1], args.lengths)
            for r in set(ref_of.values())
            if r != "plain"
        }
        times: dict[str, list[float]] = {m: [] for m in [*args.methods, *refs]}
        for ref in refs.values():
            ref.run(args.steps)  # warm-up round, not timed
        for m in args.methods:
            ours[m].run(args.steps)
        # each side's step memory (MiB): the peak above what was allocated when its timed run began
        # (every side's weights and optimiser state stay resident, so an absolute peak would count them all)
        peaks: dict[str, float] = {k: 0.0 for k in times}

        def timed(key: str, side: Any) -> None:
            base = 0
            if side.device.type == "cuda":
                torch.cuda.synchronize()
                base = torch.cuda.memory_allocated()
                torch.cuda.reset_peak_memory_stats()
            times[key].append(side.run(args.steps))
            if side.device.type == "cuda":
                peaks[key] = max(peaks[key], (torch.cuda.max_memory_allocated() - base) / 2**20)

        for rnd in range(args.rounds):
            for m in args.methods:
                timed(m, ours[m])
                timed(ref_of[m], refs[ref_of[m]])
            print(f"round {rnd + 1}: " + ", ".join(f"{k} {v[-1]:.3f}s" for k, v in times.items() if v), flush=True)
        # one more step of each side under the dispatch counter: host syncs and dispatched operators per step
        counts = {m: ours[m].counted() for m in args.methods} | {k: ref.counted() for k, ref in refs.items()}
    device = plain.device
    gpu = torch.cuda.get_device_name(0) if device.type == "cuda" else None
    peak = args.peak_tflops or next((v for k, v in PEAK_TFLOPS.items() if gpu and k in gpu), None)
    rows = []
    for m in args.methods:
        ref = times[ref_of[m]]
        plain_med = statistics.median(ref)
        med, low = statistics.median(times[m]), min(times[m])
        encoder = ours[m].encoder.model
        non_embedding = non_embedding_parameters(encoder)
        mine, theirs = ours[m].tokens, refs[ref_of[m]].tokens  # each side's own rows
        flops, plain_flops = mine.flops(encoder.config, non_embedding), theirs.flops(encoder.config, non_embedding)
        rows_per_step = (3 if m.split(":")[0] in ROW_METHODS else 1) * args.batch_size
        on_gpu = bool(peak) and device.type == "cuda"
        rows.append(
            {
                "method": m,
                "device": str(device),
                "model": args.model or f"random BERT-{args.size}",
                "batch_size": args.batch_size,
                "max_length": args.max_length,
                "rounds": args.rounds,
                "steps_per_round": args.steps,
                "ours_median_s": round(med, 4),
                "ours_min_s": round(low, 4),
                "reference": "plain SimCSE"
                if ref_of[m] == "plain"
                else f"sentence-transformers MNR ({ref_of[m].split(':')[1]} pooling)",
                "plain_median_s": round(plain_med, 4),
                "plain_min_s": round(min(ref), 4),
                "ratio_median": round(med / plain_med, 3),
                "ratio_min": round(low / min(ref), 3),
                "sentences_per_second": round(rows_per_step / med, 2),
                "plain_sentences_per_second": round(rows_per_step / plain_med, 2),
                "lengths": args.lengths,
                "real_tokens_per_step": round(mine.real, 1),
                "real_token_share": round(mine.real / mine.fed, 3),
                "plain_real_token_share": round(theirs.real / theirs.fed, 3),
                "real_tokens_per_second": round(mine.real / med, 1),
                "plain_real_tokens_per_second": round(theirs.real / plain_med, 1),
                "flops_per_step": flops,
                "non_embedding_parameters": non_embedding,
                "flop_ratio": round(flops / plain_flops, 3),
                "mfu": round(flops / med / (peak * 1e12), 4) if on_gpu and peak else None,
                "plain_mfu": round(plain_flops / plain_med / (peak * 1e12), 4) if on_gpu and peak else None,
                "prep_median_s": round(statistics.median(ours[m].prep_seconds), 4),
                "prep_workers": workers_for(device.type, torch.get_num_threads()),
                "host_syncs_per_step": sum(counts[m].syncs.values()),
                "ops_per_step": counts[m].ops,
                "plain_host_syncs_per_step": sum(counts[ref_of[m]].syncs.values()),
                "plain_ops_per_step": counts[ref_of[m]].ops,
                "step_gpu_memory_mb": round(peaks[m], 1) if gpu else None,
                "plain_step_gpu_memory_mb": round(peaks[ref_of[m]], 1) if gpu else None,
            }
        )
    meta: dict[str, Any] = {
        "python": sys.version.split()[0],
        "torch": torch.__version__,
        "platform": platform.platform(),
        "threads": torch.get_num_threads(),
        "gpu": gpu,
        "peak_gpu_memory_mb": round(torch.cuda.max_memory_allocated() / 2**20, 1) if gpu else None,
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }
    for r in rows:
        print(json.dumps(r), flush=True)
    print(json.dumps(meta), flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "train.json").write_text(json.dumps({"meta": meta, "runs": rows, "seconds": times}, indent=2) + "\n")
    lines = [
        "| method | device | model | batch | length | ours s/step (median, min) | reference | reference s/step "
        "(median, min) | ratio (median, min) | sentences/s (ours, ref.) | real tokens/s (ours, ref.) "
        "| real-token share (ours, ref.) | FLOP ratio to the reference | MFU on real tokens (ours, ref.) "
        "| host syncs/step (ours, ref.) | operators/step (ours, ref.) | step GPU MiB (ours, ref.) "
        "| batch preparation s/step (median, prefetching thread) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {r['method']} | {r['device']} | {r['model']} | {r['batch_size']} | {r['max_length']} | "
        f"{r['ours_median_s']}, {r['ours_min_s']} | {r['reference']} | {r['plain_median_s']}, {r['plain_min_s']} | "
        f"{r['ratio_median']}, {r['ratio_min']} | {r['sentences_per_second']}, {r['plain_sentences_per_second']} | "
        f"{r['real_tokens_per_second']}, {r['plain_real_tokens_per_second']} | "
        f"{r['real_token_share']}, {r['plain_real_token_share']} | {r['flop_ratio']} | "
        f"{r['mfu'] or '–'}, {r['plain_mfu'] or '–'} | "
        f"{r['host_syncs_per_step']}, {r['plain_host_syncs_per_step']} | {r['ops_per_step']}, "
        f"{r['plain_ops_per_step']} | "
        f"{r['step_gpu_memory_mb'] or '–'}, {r['plain_step_gpu_memory_mb'] or '–'} | {r['prep_median_s']} on "
        f"{r['prep_workers']} thread(s) |"
        for r in rows
    ]
    (out / "train.md").write_text(
        f"Measured on {meta}, {args.rounds} interleaved rounds of {args.steps} step(s), "
        f"sentence lengths: {args.lengths}.\n\n" + "\n".join(lines) + "\n"
    )
    print("\n".join(lines))


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
