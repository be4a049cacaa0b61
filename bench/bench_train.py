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
construction of the packing, checked in ``tests/models/test_unpadded.py``; a captured step's
static packing adds scratch rows up to a multiple of its granule, counted as fed). Figures go to
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

from clinsent.config.declare import build
from clinsent.config.sections import MethodConfig, RunConfig, Training, TrainingDataEntry
from clinsent.data.batching import Candidate, plan_batches
from clinsent.data.plan import PlanData
from clinsent.data.rows import RowsData
from clinsent.methods.config import resolve_method
from clinsent.models.base import load_transformer
from clinsent.models.batch_tree import dicts
from clinsent.models.encoder import Encoder, autocast
from clinsent.models.unpadded import PACKING
from clinsent.optimisation import pick_device
from clinsent.train.graphs import Recording
from clinsent.train.loop import MethodLoop
from clinsent.train.prefetch import workers_for
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
# (width, layers, heads, feed-forward); "depth": BERT-base's 12 layers at the tiny width, which
# dispatches the operators BERT-base dispatches (the count depends on the layers, not the width)
SIZES = {"base": (768, 12, 12, 3072), "small": (256, 4, 4, 1024), "tiny": (64, 2, 2, 128), "depth": (64, 12, 2, 128)}
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


def token_tables(model: str, frame: pd.DataFrame, length: int, linked: pd.DataFrame | None = None,
                 layout: str | None = None) -> Any:  # fmt: skip
    """The token file the ``tokens`` rule would write for ``frame`` (sentences, rows or the
    definitions of ``linked`` entities), written and read back memory-mapped, as a train job reads it."""
    from clinsent.data.token_sources import tokenize_source
    from clinsent.data.tokens import read_tables, write_tables
    from clinsent.models.base import load_tokenizer

    layout = layout or ("rows" if "anchor" in frame else "sentences")
    folder = Path(tempfile.mkdtemp(prefix="bench-tokens-"))
    frame.to_parquet(folder / "source.parquet")
    if linked is not None:
        linked.to_parquet(folder / "linked.parquet")
    out = tokenize_source(
        layout, folder / "source.parquet", load_tokenizer(model), length,
        folder / "linked.parquet" if linked is not None else None, log=lambda _: None,
    )  # fmt: skip
    write_tables(folder / "tokens.arrow", *out)
    return read_tables(folder / "tokens.arrow")


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


def method_of(variant: str, batch: int, length: int, steps: int) -> Any:
    """A bench row's method: an objective with its knobs after colons (``simcse:unpad=true``)."""
    name, *extra = variant.split(":")
    knobs: dict[str, Any] = {"steps": steps, "batch_size": batch, "max_length": length, "checkpoint_every": 0}
    knobs.update({k: yaml.safe_load(v) for k, v in (e.split("=", 1) for e in extra)})
    if name in ROW_METHODS:
        knobs["train_data"] = "rows"
    cfg = RunConfig(training_data={"rows": TrainingDataEntry(format="nli_jsonl", path="rows")})
    return resolve_method(name, build(MethodConfig, {"objective": name, **knobs}), Training(), [0], cfg).method


def training_data(method: Any, model: str, batch: int, length: int, steps: int, lengths: str) -> Any:
    """The method's training data as a train job reads it: a batch plan (MED-SE: with the entities'
    spans and definitions) or triplets, with the token files the ``tokens`` rule would write."""
    sentences, entities, cands = corpus(max(4 * batch, 64), lengths)
    if method.name in ROW_METHODS:
        texts = sentences["text"].tolist()
        rows = pd.DataFrame({"anchor": texts, "positive": texts[1:] + texts[:1], "negative": texts[2:] + texts[:2]})
        tokens = token_tables(model, rows, length) if method.tokenized else None
        return RowsData(rows, batch, seed=0, tokens=tokens, columns=("anchor", "positive", "negative"))
    medse = method.name == "medse"
    plan = plan_batches(cands, "replace" if medse else "naive", batch, steps, seed=0)
    tokens = token_tables(model, sentences, length, entities if medse else None) if method.tokenized else None
    definitions = token_tables(model, entities, 64, layout="definitions") if medse else None
    return PlanData(plan, sentences, entities if medse else None, tokens=tokens, definitions=definitions)


def fed(batch: Any) -> tuple[int, int, int]:
    """(token positions fed, real tokens, rows the unpadded forward packs: the real tokens and a
    static packing's scratch rows) of a prepared batch's distinct attention masks (a view of
    another, SimCSE's first view, counted once)."""
    seen: set[int] = set()
    total = real = packed = 0
    for found in dicts(batch):
        mask = found.get("attention_mask")
        if isinstance(mask, torch.Tensor) and mask.untyped_storage().data_ptr() not in seen:
            seen.add(mask.untyped_storage().data_ptr())
            n = int(mask.sum())
            pack = found.get(PACKING)
            total, real, packed = total + mask.numel(), real + n, packed + (len(pack.index) if pack else n)
    return total, real, packed


class Ours:
    """The trainer's loop for one method (``MethodLoop``: its batches, then ``MethodLoop.advance``),
    its batches drawn from one stream for the whole measurement, as a training job draws them."""

    def __init__(
        self, model: str, variant: str, batch: int, length: int, total_steps: int, lengths: str, stand_in: bool = False
    ) -> None:
        self.method = method_of(variant, batch, length, total_steps)
        self.data = training_data(self.method, model, batch, length, total_steps, lengths)
        self.device = pick_device()
        t = load_transformer(model, length)
        t.model.to(self.device)
        s = self.method.settings
        self.encoder = Encoder(t.model, t.tokenizer, s.pooling, s.first_layer, length, self.device)
        # --stand-in: on the CPU, the captured path's plumbing (clinsent.train.graphs.Recording), not its speed
        capture = Recording() if stand_in and self.method.settings.graphs is True else None
        self.loop = MethodLoop(self.method, self.encoder, seed=0, data=self.data, log=lambda _: None, capture=capture)
        self.prep_seconds: list[float] = []  # each batch's preparation (inline, or on a prefetching thread)
        self.fed = [0, 0]  # token positions fed and real tokens, over the steps taken
        prepare = self.loop.prepare

        def timed(data: Any, step: int) -> dict[str, Any]:
            t0 = time.perf_counter()
            out = prepare(data, step)
            self.prep_seconds.append(time.perf_counter() - t0)
            return out

        self.loop.prepare = timed  # type: ignore[method-assign]
        self.stream = self.loop.batches(self.data, 1)
        rows = [self.data.batch(step) for step in range(1, total_steps + 1)]
        self.tokens = Tokens.of(  # the real tokens of every step's encoder passes (from the texts)
            [[list(r[c].dropna().astype(str)) for c in PASSES if c in r for _ in range(PASSES[c])] for r in rows],
            t.tokenizer,
            length,
            unpadded=bool(self.loop.s.unpad),  # resolved on this device (auto is off on the CPU)
        )

    def _next(self) -> dict[str, Any]:
        step, batch = next(self.stream)
        positions, real, packed = fed(batch)
        self.fed[0] += packed if self.loop.s.unpad else positions  # unpad: the real tokens (and scratch rows)
        self.fed[1] += real
        return {"step": step, "batch": batch}

    def counted(self) -> SyncCounter:
        """One more step (its batch prepared first, outside the count) under the sync counter."""
        got = self._next()
        with SyncCounter() as counter:
            self.loop.advance(got["step"], got["batch"])
        return counter

    def run(self, n: int) -> float:
        """Seconds per step over ``n`` steps, the clock started once the batches in flight are ready."""
        self.stream.wait_full()
        t0 = time.perf_counter()
        for _ in range(n):
            got = self._next()
            self.loop.advance(got["step"], got["batch"])
        if self.device.type == "cuda":
            torch.cuda.synchronize()
        return (time.perf_counter() - t0) / n

    def real_share(self) -> float:
        """The share of the positions fed to the encoders that are real tokens, over the steps taken."""
        return self.fed[1] / max(self.fed[0], 1)


class _Reference:
    """A reference step timed n times (``step`` and ``device`` from the subclass), stepping through
    the same batches as ours, one after another (the texts change as ours do)."""

    device: torch.device
    tokens: Tokens  # the real tokens of its steps (from the texts)
    k = 0

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
    InfoNCE, AdamW (fused on CUDA), gradient clipping at 1.0; each step the next batch of the plan."""

    def __init__(self, model: str, batches: list[list[str]], length: int) -> None:
        from transformers import AutoModel, AutoTokenizer

        from clinsent.models.base import resolve_model

        self.device = pick_device()
        path = resolve_model(model)
        self.tokenizer = AutoTokenizer.from_pretrained(path)
        self.model = AutoModel.from_pretrained(path).to(self.device).train()
        self.optimizer = torch.optim.AdamW(
            self.model.parameters(), lr=3e-5, weight_decay=0.0, fused=self.device.type == "cuda" or None
        )
        self.batches, self.length = batches, length
        self.tokens = Tokens.of([[texts, texts] for texts in batches], self.tokenizer, length)
        self.forward: Any = self.model

    def next_inputs(self) -> tuple[int, dict[str, torch.Tensor]]:
        """The next batch's rows and its two views' inputs on the device: tokenized here, copied
        from pageable memory."""
        texts = self.batches[self.k % len(self.batches)]
        enc = self.tokenizer(texts, padding=True, truncation=True, max_length=self.length, return_tensors="pt")
        return len(texts), {k: torch.cat([v, v]).to(self.device) for k, v in enc.items()}

    def step(self) -> None:
        n, inputs = self.next_inputs()
        self.k += 1
        with autocast(self.device):
            hs = self.forward(**inputs, output_hidden_states=True).hidden_states
        mask = inputs["attention_mask"].unsqueeze(-1).float()
        emb = (((hs[1].float() + hs[-1].float()) / 2) * mask).sum(1) / mask.sum(1)
        z1, z2 = F.normalize(emb[:n], dim=-1), F.normalize(emb[n:], dim=-1)
        loss = F.cross_entropy(z1 @ z2.T / 0.05, torch.arange(n, device=self.device))
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.optimizer.step()


class CompiledPlainSimCSE(PlainSimCSE):
    """The plain loop as an expert writes it in an afternoon (the ``plain:compile`` anchor): the
    same model, batches and step as :class:`PlainSimCSE`, but every batch tokenized before the
    clock (each padded to its own longest row, both views stacked) and held in pinned memory
    (copied to the device without blocking), and the model ``torch.compile``d: mode ``default``
    (inductor, no CUDA graphs of its own), ``dynamic=True`` (one graph for every padded length, so
    the demo's lengths do not recompile it). The compile runs in the untimed warm-up round."""

    MODE = "default"

    def __init__(self, model: str, batches: list[list[str]], length: int) -> None:
        super().__init__(model, batches, length)
        pin = self.device.type == "cuda"
        self.ready = []
        for texts in batches:
            enc = self.tokenizer(texts, padding=True, truncation=True, max_length=length, return_tensors="pt")
            both = {k: torch.cat([v, v]) for k, v in enc.items()}
            self.ready.append({k: v.pin_memory() if pin else v for k, v in both.items()})
        self.forward = torch.compile(self.model, mode=self.MODE, dynamic=True)

    def next_inputs(self) -> tuple[int, dict[str, torch.Tensor]]:
        """The next batch, tokenized before the clock, copied from pinned memory without blocking."""
        ready = self.ready[self.k % len(self.ready)]
        return len(self.batches[self.k % len(self.batches)]), {
            k: v.to(self.device, non_blocking=True) for k, v in ready.items()
        }


class PlainMNR(_Reference):
    """sentence-transformers' own step on the same triplets: the library's model (the method's
    pooling), its MultipleNegativesRankingLoss (scale 20), AdamW, gradient clipping at 1.0; each
    step the next batch of triplets."""

    def __init__(self, model: str, batches: list[list[list[str]]], length: int, pooling: str) -> None:
        from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

        from clinsent.models.base import sentence_transformer

        self.device = pick_device()
        self.model = sentence_transformer(load_transformer(model, length), pooling, device=str(self.device))
        self.model.train()
        self.loss = MultipleNegativesRankingLoss(self.model, scale=20.0)
        self.optimizer = torch.optim.AdamW(
            self.model.parameters(), lr=3e-5, weight_decay=0.0, fused=self.device.type == "cuda" or None
        )
        self.batches = batches
        self.tokens = Tokens.of(batches, self.model.tokenizer, length)

    def step(self) -> None:
        from sentence_transformers.util import batch_to_device

        columns = self.batches[self.k % len(self.batches)]
        self.k += 1
        features = [batch_to_device(self.model.preprocess(c), self.device) for c in columns]
        with autocast(self.device):
            loss = self.loss(features, None)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.optimizer.step()


def reference_batches(ours: Ours, steps: int) -> tuple[str, Any]:
    """The reference a row is held to and the batches it steps through (ours' own, step by step):
    plain SimCSE on the plan's sentences, or (row methods) sentence-transformers' MNR step on the triplets."""
    frames = [ours.data.batch(step) for step in range(1, steps + 1)]
    if ours.method.name in ROW_METHODS:
        key = f"st_mnr:{ours.method.settings.pooling}"
        return key, [[list(f[c].astype(str)) for c in ("anchor", "positive", "negative")] for f in frames]
    return "plain", [list(f["text"].astype(str)) for f in frames]


def run_proxies(
    methods: list[str], out: Path, batch: int = 64, length: int = 128, steps: int = 60, quick: bool = False
) -> None:
    """Every CPU proxy of each method (bench/proxies.py), printed one line per method; ``quick``:
    short windows and one round (the CPU mode of ``make gpu-check``: that every path runs)."""
    import proxies

    if quick:
        proxies.WINDOW, proxies.ROUNDS, steps = 0.3, 1, 12
    torch.set_num_threads(1)  # one core for the step's own work, the other for the preparing thread
    with tempfile.TemporaryDirectory() as tmp:
        tiny, deep = build_model(Path(tmp) / "tiny", "tiny"), build_model(Path(tmp) / "deep", "depth")
        rows = {}
        for m in methods:
            ours = Ours(str(tiny), m, batch, length, steps, "demo")
            ours.loop.loss.use_static_shapes(True)  # the batches a captured (CUDA) run makes

            def ops(m: str = m) -> int:
                counted = Ours(str(deep), m, 16, length, 4, "demo")
                counted.run(1)
                return counted.counted().ops

            rows[m] = proxies.measure(ours, steps, ops)
            print(f"measured {m}", flush=True)
    meta = {
        "python": sys.version.split()[0],
        "torch": torch.__version__,
        "platform": platform.platform(),
        "batch_size": batch,
        "max_length": length,
        "model": "random BERT-tiny",
        "lengths": "demo",
    }
    print("\n".join(proxies.report(rows, meta, out)))


WARM = 96  # steps at most before the clock (--warm): every batch shape of the timed steps stepped twice first


def parse_args() -> argparse.Namespace:
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
    ap.add_argument(
        "--proxies",
        action="store_true",
        help="the CPU proxies instead (bench/proxies.py): tiny model, batch 64, length 128, demo lengths",
    )
    ap.add_argument("--quick", action="store_true", help="with --proxies: short windows (make gpu-check MODE=cpu)")
    ap.add_argument(
        "--warm",
        type=int,
        default=WARM,
        help="steps at most before the clock; a row whose timed batch shapes were not all stepped twice "
        "within them stops the bench (a captured step would be timed capturing)",
    )
    ap.add_argument(
        "--stand-in",
        action="store_true",
        help="rows with graphs=true on the CPU step through the recording stand-in for the CUDA capture "
        "(make gpu-check MODE=cpu: the captured path runs; its speed is a GPU's to measure)",
    )
    args = ap.parse_args()
    if args.rounds < 5 and not args.proxies:
        ap.error("--rounds must be at least 5")
    return args


def warm_steps(ours: Ours, timed: range, row: str = "") -> int:
    """The steps to take before the clock starts: until every batch shape of the ``timed`` steps has
    been stepped twice (a GPU plans its kernels, or captures the step, on first sight). Where the
    steps before ``timed`` do not hold each shape twice, a captured row stops the bench naming the
    row (a timed step would capture, or run eagerly, and its time would not be the row's); an eager
    row whose shapes change every step (the unpadded forward without its static packing) takes
    every step before ``timed`` and says how many of its timed shapes are new."""
    from clinsent.train.graphs import signature

    shapes = [signature(ours.loop.prepare(ours.data, step)) for step in range(1, timed.stop)]
    wanted = set(shapes[timed.start - 1 :])
    for k in range(1, timed.start):
        if all(shapes[:k].count(sig) >= 2 for sig in wanted):
            return k
    short = sum(shapes[: timed.start - 1].count(sig) < 2 for sig in wanted)
    if ours.loop.graphs is None:
        print(f"{row or ours.method.name}: eager, {short} of the {len(wanted)} timed batch shapes new", flush=True)
        return timed.start - 1
    raise SystemExit(
        f"bench: {row or ours.method.name}: {short} of the {len(wanted)} batch shapes of the timed steps were not "
        f"stepped twice in the {timed.start - 1} steps before the clock, so their timed steps would capture or run "
        "eagerly. Fix: raise --warm"
    )


ANCHORS = ("plain", "plain:compile")  # the references of a sentence method: naive and compiled


def references_for(ours: Ours, steps: int) -> dict[str, Any]:
    """The references a row is held to, and the batches they step through (ours' own, step by step):
    plain SimCSE, naive and compiled (``plain``, ``plain:compile``), on the plan's sentences; or
    (row methods) sentence-transformers' MNR step on the triplets."""
    key, batches = reference_batches(ours, steps)
    return {key: batches} if key != "plain" else dict.fromkeys(ANCHORS, batches)


def reference(key: str, model: str, batches: Any, length: int) -> _Reference:
    if key == "plain":
        return PlainSimCSE(model, batches, length)
    if key == "plain:compile":
        return CompiledPlainSimCSE(model, batches, length)
    return PlainMNR(model, batches, length, key.split(":")[1])


class Measured:
    """What the rows measured so far: the references (built once, on the first row that needs
    them, and kept), every side's seconds per round, peaks and one counted step."""

    def __init__(self) -> None:
        self.refs: dict[str, _Reference] = {}
        self.times: dict[str, list[float]] = {}
        self.peaks: dict[str, float] = {}
        self.counts: dict[str, SyncCounter] = {}
        self.built: dict[str, float] = {}  # a reference's set-up and warm-up seconds (a compile's)


def measure_row(m: str, args: argparse.Namespace, model: str, got: Measured) -> dict[str, Any]:
    """One row: ours beside its references, interleaved round by round on the same timed steps."""
    total = args.warm + args.rounds * args.steps + 1  # the warm-up, the timed rounds and one counted step
    ours = Ours(model, m, args.batch_size, args.max_length, total, args.lengths, args.stand_in)
    wanted = references_for(ours, total)
    for key, batches in wanted.items():
        if key not in got.refs:
            t0 = time.perf_counter()
            got.refs[key] = reference(key, model, batches, args.max_length)
            got.refs[key].run(args.steps)  # warm-up round (a compile), not timed
            got.built[key] = round(time.perf_counter() - t0, 1)
            got.times[key], got.peaks[key] = [], 0.0
        got.refs[key].k = args.warm  # the timed steps' batches
    timed_steps = range(args.warm + 1, total)
    warm = warm_steps(ours, timed_steps, m)
    ours.run(warm)  # every shape of the timed steps seen twice
    for _ in range(args.warm - warm):
        next(ours.stream)  # the timed steps are the same for every row
    times: dict[str, list[float]] = {m: [], **{k: [] for k in wanted}}
    peaks = dict.fromkeys(times, 0.0)
    for rnd in range(args.rounds):
        for key in times:
            side = ours if key == m else got.refs[key]
            times[key].append(_timed(side, args.steps, peaks, key))
        print(f"{m}, round {rnd + 1}: " + ", ".join(f"{k} {v[-1]:.3f}s" for k, v in times.items()), flush=True)
    counts = {m: ours.counted()}  # one more step under the dispatch counter: host syncs, operators
    for key in wanted:
        got.times[key] += times[key]
        got.peaks[key] = max(got.peaks[key], peaks[key])
        if key not in got.counts:
            got.counts[key] = got.refs[key].counted()
        counts[key] = got.counts[key]
    return {"ours": ours, "refs": {k: got.refs[k] for k in wanted}, "times": times, "peaks": peaks, "counts": counts}


def _timed(side: Any, steps: int, peaks: dict[str, float], key: str) -> float:
    """One round of ``side``; its step memory (MiB): the peak above what was allocated when the round
    began (every side's weights and optimiser state stay resident, so an absolute peak counts them all)."""
    base = 0
    if side.device.type == "cuda":
        torch.cuda.synchronize()
        base = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
    seconds = float(side.run(steps))
    if side.device.type == "cuda":
        peaks[key] = max(peaks[key], (torch.cuda.max_memory_allocated() - base) / 2**20)
    return seconds


def _mfu(flops: float, seconds: float, peak: float | None, gpu: bool) -> float | None:
    return round(flops / seconds / (peak * 1e12), 4) if gpu and peak else None


def row_of(m: str, args: argparse.Namespace, got: dict[str, Any], peak: float | None) -> dict[str, Any]:
    """One method's figures beside its references' (measured in the same rounds)."""
    ours, times, counts = got["ours"], got["times"], got["counts"]
    key = next(iter(got["refs"]))  # plain, or the row methods' sentence-transformers step
    ref = got["refs"][key]
    plain_med, med, low = statistics.median(times[key]), statistics.median(times[m]), min(times[m])
    encoder = ours.encoder.model
    non_embedding = non_embedding_parameters(encoder)
    flops, plain_flops = (
        ours.tokens.flops(encoder.config, non_embedding),
        ref.tokens.flops(encoder.config, non_embedding),
    )
    rows_per_step = (3 if m.split(":")[0] in ROW_METHODS else 1) * args.batch_size
    gpu = ours.device.type == "cuda"
    compiled = times.get("plain:compile")
    compiled_med = statistics.median(compiled) if compiled else None
    return {
        "method": m,
        "device": str(ours.device),
        "model": args.model or f"random BERT-{args.size}",
        "batch_size": args.batch_size,
        "max_length": args.max_length,
        "rounds": args.rounds,
        "steps_per_round": args.steps,
        "ours_median_s": round(med, 4),
        "ours_min_s": round(low, 4),
        "reference": "plain SimCSE" if key == "plain" else f"sentence-transformers MNR ({key.split(':')[1]} pooling)",
        "plain_median_s": round(plain_med, 4),
        "plain_min_s": round(min(times[key]), 4),
        "ratio_median": round(med / plain_med, 3),
        "ratio_min": round(low / min(times[key]), 3),
        # the compiled anchor (plain:compile), where the row has one
        "compiled_median_s": round(compiled_med, 4) if compiled_med else None,
        "compiled_min_s": round(min(compiled), 4) if compiled else None,
        "ratio_compiled_median": round(med / compiled_med, 3) if compiled_med else None,
        "ratio_compiled_min": round(low / min(compiled), 3) if compiled else None,
        "sentences_per_second": round(rows_per_step / med, 2),
        "plain_sentences_per_second": round(rows_per_step / plain_med, 2),
        "lengths": args.lengths,
        "real_tokens_per_step": round(ours.tokens.real, 1),
        "real_token_share": round(ours.real_share(), 3),
        "plain_real_token_share": round(ref.tokens.real / ref.tokens.fed, 3),
        "real_tokens_per_second": round(ours.tokens.real / med, 1),
        "plain_real_tokens_per_second": round(ref.tokens.real / plain_med, 1),
        "flops_per_step": flops,
        "non_embedding_parameters": non_embedding,
        "flop_ratio": round(flops / plain_flops, 3),
        "mfu": _mfu(flops, med, peak, gpu),
        "plain_mfu": _mfu(plain_flops, plain_med, peak, gpu),
        "compiled_mfu": _mfu(plain_flops, compiled_med, peak, gpu) if compiled_med else None,
        "prep_median_s": round(statistics.median(ours.prep_seconds), 5),
        "prep_where": "inline"
        if ours.loop.tokens
        else f"{workers_for(ours.device.type, torch.get_num_threads())} thread(s)",
        "graphs": len(ours.loop.graphs.graphs) if ours.loop.graphs is not None else 0,
        "host_syncs_per_step": sum(counts[m].syncs.values()),
        "ops_per_step": counts[m].ops,
        "plain_host_syncs_per_step": sum(counts[key].syncs.values()),
        "plain_ops_per_step": counts[key].ops,
        "step_gpu_memory_mb": round(got["peaks"][m], 1) if gpu else None,
        "plain_step_gpu_memory_mb": round(got["peaks"][key], 1) if gpu else None,
    }


def reference_rows(got: Measured, args: argparse.Namespace, peak: float | None) -> list[dict[str, Any]]:
    """Each reference as a row of its own (``plain``, ``plain:compile``, ``st_mnr:<pooling>``): its
    seconds per step over every round it was timed in, its throughput and MFU."""
    out = []
    for key, ref in got.refs.items():
        times = got.times[key]
        if not times:
            continue
        med = statistics.median(times)
        model = getattr(ref, "model", None)
        encoder = getattr(model, "base_model", model) if key.startswith(("plain",)) else None
        flops = ref.tokens.flops(encoder.config, non_embedding_parameters(encoder)) if encoder is not None else None
        gpu = ref.device.type == "cuda"
        counted = got.counts.get(key)
        out.append(
            {
                "reference": key,
                "what": {
                    "plain": "plain SimCSE: tokenized inside the step, pageable copies, eager",
                    "plain:compile": f"plain SimCSE pre-tokenized, {'pinned, ' if gpu else ''}torch.compile mode "
                    f"{CompiledPlainSimCSE.MODE}, dynamic shapes",
                }.get(key, "sentence-transformers' MNR step"),
                "median_s": round(med, 4),
                "min_s": round(min(times), 4),
                "rounds": len(times),
                "set_up_s": got.built.get(key),
                "real_tokens_per_second": round(ref.tokens.real / med, 1),
                "mfu": _mfu(flops, med, peak, gpu) if flops else None,
                "host_syncs_per_step": sum(counted.syncs.values()) if counted else None,
                "ops_per_step": counted.ops if counted else None,
                "step_gpu_memory_mb": round(got.peaks[key], 1) if gpu else None,
            }
        )
    return out


def write(
    rows: list[dict[str, Any]], refs: list[dict[str, Any]], meta: dict[str, Any], args: argparse.Namespace
) -> None:
    """``train.json`` and ``train.md`` under ``--out`` with the rows measured so far (written after
    every row: a bench cut short keeps its finished rows)."""
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    record = {"meta": meta, "runs": rows, "references": refs, "methods": args.methods}
    (out / "train.json").write_text(json.dumps(record, indent=2) + "\n")
    lines = [
        "| method | device | model | batch | length | ours s/step (median, min) | reference | reference s/step "
        "(median, min) | ratio (median, min) | plain:compile s/step (median) | ratio to plain:compile (median, "
        "min) | sentences/s (ours, ref.) | real tokens/s (ours, ref.) "
        "| real-token share (ours, ref.) | FLOP ratio to the reference | MFU on real tokens (ours, ref., "
        "compiled) | host syncs/step (ours, ref.) | operators/step (ours, ref.) | step GPU MiB (ours, ref.) "
        "| batch preparation s (median, where) | captured shapes |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {r['method']} | {r['device']} | {r['model']} | {r['batch_size']} | {r['max_length']} | "
        f"{r['ours_median_s']}, {r['ours_min_s']} | {r['reference']} | {r['plain_median_s']}, {r['plain_min_s']} | "
        f"{r['ratio_median']}, {r['ratio_min']} | {r['compiled_median_s'] or '–'} | "
        f"{r['ratio_compiled_median'] or '–'}, {r['ratio_compiled_min'] or '–'} | "
        f"{r['sentences_per_second']}, {r['plain_sentences_per_second']} | "
        f"{r['real_tokens_per_second']}, {r['plain_real_tokens_per_second']} | "
        f"{r['real_token_share']}, {r['plain_real_token_share']} | {r['flop_ratio']} | "
        f"{r['mfu'] or '–'}, {r['plain_mfu'] or '–'}, {r['compiled_mfu'] or '–'} | "
        f"{r['host_syncs_per_step']}, {r['plain_host_syncs_per_step']} | {r['ops_per_step']}, "
        f"{r['plain_ops_per_step']} | "
        f"{r['step_gpu_memory_mb'] or '–'}, {r['plain_step_gpu_memory_mb'] or '–'} | {r['prep_median_s']}, "
        f"{r['prep_where']} | {r['graphs']} |"
        for r in rows
    ]
    lines += [
        "",
        "| reference row | what | s/step (median, min) | rounds | set-up and warm-up s | real tokens/s | MFU "
        "| host syncs/step | operators/step | step GPU MiB |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {r['reference']} | {r['what']} | {r['median_s']}, {r['min_s']} | {r['rounds']} | {r['set_up_s']} | "
        f"{r['real_tokens_per_second']} | {r['mfu'] or '–'} | {r['host_syncs_per_step']} | {r['ops_per_step']} | "
        f"{r['step_gpu_memory_mb'] or '–'} |"
        for r in refs
    ]
    left = [m for m in args.methods if m not in {r["method"] for r in rows}]
    (out / "train.md").write_text(
        f"Measured on {meta}, {args.rounds} interleaved rounds of {args.steps} step(s) per row (each row beside "
        f"its references, on the same timed steps), sentence lengths: {args.lengths}; the clock starts once every "
        "batch shape of the timed steps has been stepped twice."
        + (f" Not measured yet: {', '.join(left)}." if left else "")
        + "\n\n"
        + "\n".join(lines)
        + "\n"
    )


def _meta(gpu: str | None) -> dict[str, Any]:
    return {
        "python": sys.version.split()[0],
        "torch": torch.__version__,
        "platform": platform.platform(),
        "threads": torch.get_num_threads(),
        "gpu": gpu,
        "peak_gpu_memory_mb": round(torch.cuda.max_memory_allocated() / 2**20, 1) if gpu else None,
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def main() -> None:
    import gc

    args = parse_args()
    if args.proxies:
        run_proxies(args.methods, Path(args.out), quick=args.quick)
        return
    device = pick_device()
    gpu = torch.cuda.get_device_name(0) if device.type == "cuda" else None
    peak = args.peak_tflops or next((v for k, v in PEAK_TFLOPS.items() if gpu and k in gpu), None)
    rows: list[dict[str, Any]] = []
    got = Measured()
    with tempfile.TemporaryDirectory() as tmp:
        model = args.model or str(build_model(Path(tmp) / "model", args.size))
        for m in args.methods:  # each row written as it finishes
            measured = measure_row(m, args, model, got)
            rows.append(row_of(m, args, measured, peak))
            print(json.dumps(rows[-1]), flush=True)
            write(rows, reference_rows(got, args, peak), _meta(gpu), args)
            del measured
            gc.collect()
            if gpu:
                torch.cuda.empty_cache()
    print((Path(args.out) / "train.md").read_text())


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
