"""The losses' test helpers: clinical-looking rows for every objective, a method and an encoder
on the tiny BERT, a prepared batch, parameters and their gradients, one plain pass, and the two
passes of a cached step (shared by the loss, chunked, compiled, unpadded, speed and CUDA tests)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pandas as pd
import torch

from clinsent.config.sections import RunConfig
from clinsent.losses.base import Embedded, MethodLoss
from clinsent.models.base import load_transformer
from clinsent.models.encoder import Encoder

from testkit.methods import resolve_method

DISEASES = [
    "heart failure",
    "diabetes",
    "asthma",
    "pneumonia",
    "sepsis",
    "gout",
    "anemia",
    "migraine",
    "hypertension",
    "atrial fibrillation",
    "kidney disease",
    "depression",
    "stroke",
]


def clinical_texts(n: int) -> list[str]:
    return [
        f"Patient {i} has a history of {DISEASES[i % len(DISEASES)]}" + " and was seen today" * (i % 4)
        for i in range(n)
    ]


def objective_rows(objective: str, n: int = 13) -> pd.DataFrame:
    texts = clinical_texts(n)
    if objective in ("sup_simcse", "mnr"):
        return pd.DataFrame({"anchor": texts, "positive": texts[1:] + texts[:1], "negative": texts[3:] + texts[:3]})
    if objective in ("declutr", "mlm", "note_category"):
        docs = [" ".join([t] * 4) for t in texts]  # 24+ words: declutr's 2 anchors x max_span 6 x 2
        return pd.DataFrame({"text": docs, "category": [("a", "b", "c")[i % 3] for i in range(n)]})
    rows = pd.DataFrame({"text": texts})
    if objective == "medse":  # every third sentence without an entity
        d = [DISEASES[i % len(DISEASES)] for i in range(n)]
        rows["start"] = [t.index(x) for t, x in zip(texts, d, strict=True)]
        rows["end"] = rows["start"] + [len(x) for x in d]
        rows["definition"] = [
            None if i % 3 == 2 else f"{x.capitalize()} is a disease of the body." for i, x in enumerate(d)
        ]
    return rows


def no_dropout(*modules: torch.nn.Module) -> None:
    for top in modules:
        for m in top.modules():
            if isinstance(m, torch.nn.Dropout):
                m.p = 0.0
            if isinstance(m, torch.nn.MultiheadAttention):
                m.dropout = 0.0
            if isinstance(m, torch.nn.LSTM):
                m.dropout = 0.0


def method_and_encoder(tiny_bert: Path, objective: str, **knobs: Any) -> tuple[Any, Encoder]:
    """The objective's method (batch 13, length 32; knobs over those) and an encoder on the tiny BERT."""
    base: dict[str, Any] = {"steps": 2, "batch_size": 13, "max_length": 32}
    if objective in ("sup_simcse", "mnr"):
        base["train_data"] = "rows"
    if objective == "declutr":
        base.update({"min_span": 2, "max_span": 6})
    method = resolve_method(
        "m", {"objective": objective, **base, **knobs}, {}, [0], RunConfig(training_data={"rows": {}})
    ).method
    s = method.settings
    t = load_transformer(str(tiny_bert), s.max_length)
    torch.manual_seed(0)
    return method, Encoder(t.model, t.tokenizer, s.pooling, s.first_layer, s.max_length, torch.device("cpu"))


def loss_and_batch(
    method: Any, encoder: Encoder, objective: str, dropout: bool = False
) -> tuple[MethodLoss, Encoder, dict[str, Any]]:
    """The method's loss on the encoder's device, in train mode (dropout off unless asked), and a
    prepared batch of the objective's rows (test_cuda.py builds the same on a GPU)."""
    loss = method.build_loss(encoder)
    loss.bind(SimpleNamespace(classes=["a", "b", "c"]))
    loss.to(encoder.device)
    encoder.model.train()
    loss.train()
    if not dropout:
        no_dropout(encoder.model, loss)
    batch = loss.prepare(objective_rows(objective, 16 if objective == "ct" else 13), torch.Generator().manual_seed(0))
    return loss, encoder, batch


def trainable_params(loss: MethodLoss, encoder: Encoder) -> dict[str, torch.nn.Parameter]:
    named = {f"encoder.{k}": p for k, p in encoder.model.named_parameters()}
    named |= {f"loss.{k}": p for k, p in loss.named_parameters() if all(p is not q for q in named.values())}
    return {k: p for k, p in named.items() if p.requires_grad}


def take_grads(params: dict[str, torch.nn.Parameter]) -> dict[str, torch.Tensor]:
    out = {k: p.grad.detach().clone() if p.grad is not None else torch.zeros_like(p) for k, p in params.items()}
    for p in params.values():
        p.grad = None
    return out


def one_pass(loss: MethodLoss, batch: dict[str, Any]) -> dict[str, torch.Tensor]:
    parts = loss(batch)
    torch.stack(list(parts.values())).sum().backward()
    return {k: v.detach() for k, v in parts.items()}


def two_passes(loss: MethodLoss, step: Callable[[], Any]) -> list[tuple[Embedded, Embedded]]:
    """Run ``step`` (a cached step of ``loss``) and pair each chunk's no-gradient ``embed`` result
    with its gradient pass's: the loss's own ``embed`` is watched, the step is not changed."""
    calls: list[Embedded] = []
    embed = loss.embed

    def watched(*args: Any, **kwargs: Any) -> Embedded:
        calls.append(embed(*args, **kwargs))
        return calls[-1]

    loss.embed = watched  # type: ignore[method-assign]
    try:
        step()
    finally:
        del loss.embed
    half = len(calls) // 2
    return list(zip(calls[:half], calls[half:], strict=True))


def token_plan(
    folder: Path, model: Path, steps: int, batch: int, max_length: int, entities: bool = False, n: int = 40
) -> Any:
    """A batch plan over ``n`` clinical sentences (every third without a defined entity) with the
    token files the ``tokens`` rule would write (written and read back: the train job's path)."""
    import numpy as np

    from clinsent.data.batching import Candidate, plan_batches
    from clinsent.data.plan import PlanData
    from clinsent.data.token_sources import tokenize_source
    from clinsent.data.tokens import read_tables, write_tables
    from clinsent.models.base import load_tokenizer

    rows = objective_rows("medse", n)
    sentences = pd.DataFrame({"sent_id": np.arange(100, 100 + n), "text": rows["text"]})
    linked = pd.DataFrame(
        {
            "sent_id": sentences["sent_id"],
            "ent_idx": 0,
            "start": rows["start"],
            "end": rows["end"],
            "term_id": [f"T{i % 9}" for i in range(n)],
            "definition": [None if d is None else f"{d} ({i % 9})" for i, d in enumerate(rows["definition"])],
        }
    )
    linked.loc[linked["definition"].isna(), "term_id"] = None
    folder.mkdir(parents=True, exist_ok=True)
    sentences.to_parquet(folder / "sets.parquet")
    linked.to_parquet(folder / "linked.parquet")
    tokenizer = load_tokenizer(str(model))
    write_tables(
        folder / "tokens.arrow",
        *tokenize_source("sentences", folder / "sets.parquet", tokenizer, max_length, folder / "linked.parquet"),
    )
    write_tables(folder / "defs.arrow", *tokenize_source("definitions", folder / "linked.parquet", tokenizer, 64))
    cands = [
        Candidate(int(s), (0,) if t else (), (t,) if t else ())
        for s, t in zip(linked["sent_id"], linked["term_id"], strict=True)
    ]
    plan = plan_batches(cands, "naive", batch, steps, seed=0)
    return PlanData(
        plan,
        sentences,
        linked if entities else None,
        tokens=read_tables(folder / "tokens.arrow"),
        definitions=read_tables(folder / "defs.arrow") if entities else None,
    )


def token_rows(folder: Path, model: Path, batch: int, max_length: int, n: int = 40) -> Any:
    """Triplets (anchor, positive, negative) with the token file the ``tokens`` rule would write."""
    from clinsent.data.rows import RowsData
    from clinsent.data.token_sources import tokenize_source
    from clinsent.data.tokens import read_tables, write_tables
    from clinsent.models.base import load_tokenizer

    rows = objective_rows("sup_simcse", n)
    folder.mkdir(parents=True, exist_ok=True)
    rows.to_parquet(folder / "rows.parquet")
    write_tables(
        folder / "rows.arrow",
        *tokenize_source("rows", folder / "rows.parquet", load_tokenizer(str(model)), max_length),
    )
    tables = read_tables(folder / "rows.arrow")
    return RowsData(rows, batch, seed=0, tokens=tables, columns=("anchor", "positive", "negative"))
