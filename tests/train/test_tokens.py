"""Batches from token files (clinsent.data.tokens, clinsent.data.encode, clinsent.data.buckets): a
token table is the tokenizer's own batch; MED-SE's spans are the tokens its offset mapping gives;
the buckets pad the fewest tokens any set of that many lengths pads; MLM's masking is the
collator's; and, for every objective, a step padded to a bucket equals the step padded to its
longest row (float32, the same draws given to both: dropout, MLM masks, augmentations), in its
loss and every gradient, within 1e-5."""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from unittest import mock

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from clinsent.data.buckets import Buckets, aligned, choose
from clinsent.data.encode import TextEncoder, entity_spans
from clinsent.data.tokens import read_tables, write_tables
from clinsent.losses.medse import span_token_mask
from clinsent.losses.mlm import masked_slots
from clinsent.methods import METHODS

from testkit.losses import method_and_encoder, no_dropout, objective_rows, take_grads, trainable_params

REPO = Path(__file__).resolve().parents[2]
TRAINED = sorted(n for n in METHODS.names() if n != "none")
TOLERANCE = 1e-5
EDGES = [
    "",
    "a " * 300,
    "Pt c/o SOB, ?CHF \u2014 x-ray: bilateral effusions; \uff26\uff1d\uff4d\uff41\uff53\uff53 \U0001f600",
]


def _sentences(n: int = 400) -> list[str]:
    lines = (REPO / "resources" / "demo" / "pubmed.demo.sentences.txt").read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip()][:n] + EDGES


def test_a_token_table_is_the_tokenizers_own_batch(tiny_bert: Path, tmp_path: Path) -> None:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_bert)
    texts = _sentences()
    table, _ = TextEncoder(tokenizer, 64).encode(texts)
    want = tokenizer(texts, padding=True, truncation=True, max_length=64, return_special_tokens_mask=True)
    width = len(want["input_ids"][0])
    rows = np.arange(len(texts))
    special = np.empty((len(texts), width), np.int64)
    ids, mask = table.gather(rows, width, special=special)
    assert ids.tolist() == want["input_ids"] and mask.tolist() == want["attention_mask"]
    assert special.tolist() == want["special_tokens_mask"]
    path = tmp_path / "tokens.arrow"  # through the file, memory-mapped, in another row order
    write_tables(path, np.arange(len(texts)) * 7, {"text": table})
    read = read_tables(path)
    got = read.columns["text"]
    assert not got.ids.flags.writeable and got.ids.base is not None  # a view of the mapped file
    picked = read.rows_of(np.array([21, 0, 14]), "a test")
    assert picked.tolist() == [3, 0, 2]
    wide, wide_mask = got.gather(picked, width + 5)
    assert (wide[:, :width] == ids[[3, 0, 2]]).all() and (wide[:, width:] == tokenizer.pad_token_id).all()
    assert wide_mask.sum() == mask[[3, 0, 2]].sum()
    with pytest.raises(ValueError, match="have no tokens.*rerun the tokens rule"):
        read.rows_of(np.array([1]), "a test")


def test_entity_spans_are_the_tokens_the_offset_mapping_overlaps(tiny_bert: Path) -> None:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_bert)
    texts = _sentences(200)
    table, chars = TextEncoder(tokenizer, 24).encode(texts, offsets=True)
    assert chars is not None
    rng = np.random.default_rng(0)
    rows = np.array([i for i, t in enumerate(texts) if len(t) > 4])
    start = np.array([int(rng.integers(0, len(texts[i]) - 3)) for i in rows])
    end = start + rng.integers(1, 15, len(rows))
    spans = entity_spans(table, chars, rows, np.zeros(len(rows)), start, end)
    want = tokenizer(
        texts, padding=True, truncation=True, max_length=24, return_offsets_mapping=True, return_tensors="pt"
    )
    truncated = 0
    for k, i in enumerate(rows):
        mask = span_token_mask(want["offset_mapping"][i], int(start[k]), int(end[k])).numpy()
        got = np.zeros_like(mask)
        if spans.start[k] >= 0:
            got[spans.start[k] : spans.end[k]] = True
        truncated += int(spans.start[k] < 0)
        assert (got == mask).all(), k
    assert 0 < truncated < len(rows)  # some entities lie beyond 24 tokens


@pytest.mark.parametrize("seed", range(5))
def test_buckets_pad_the_fewest_tokens_of_any_set_that_many(seed: int) -> None:
    rng = np.random.default_rng(seed)
    widths = rng.integers(3, 100, 60)
    rows = rng.integers(1, 5, 60)
    cap = 96
    values = sorted({aligned(w, cap) for w in widths})

    def padded(lengths: tuple[int, ...]) -> int:
        b = Buckets(lengths, cap)
        return int(sum(r * (b.width(w) - w) for w, r in zip(widths, rows, strict=True)))

    for count in (1, 2, 3):
        got = choose(widths, rows, count, cap)
        assert len(got) <= count and max(got) == min(cap, max(widths))
        best = min(padded(c) for c in itertools.combinations(values, count) if max(c) == values[-1])
        assert padded(got) == best, (count, got)
    assert choose(widths, rows, 0, cap) == (aligned(max(widths), cap),)


def test_mlm_masking_is_the_collators_and_padding_does_not_change_it(tiny_bert: Path) -> None:
    from transformers import AutoTokenizer, DataCollatorForLanguageModeling

    from clinsent.losses.mlm import mask_tokens

    tokenizer = AutoTokenizer.from_pretrained(tiny_bert)
    texts = ["the patient has chest pain and fever today " * 3, "renal failure", "x"] * 4
    full = tokenizer(texts, padding="max_length", max_length=48, return_tensors="pt", return_special_tokens_mask=True)
    collator = DataCollatorForLanguageModeling(tokenizer, mlm_probability=0.3)
    collator.generator = torch.Generator().manual_seed(3)
    want_ids, want_labels = collator.torch_mask_tokens(full["input_ids"].clone(), full["special_tokens_mask"].clone())
    ids, labels = mask_tokens(
        full["input_ids"], full["special_tokens_mask"], tokenizer, torch.Generator().manual_seed(3), 0.3
    )
    assert torch.equal(ids, want_ids) and torch.equal(labels, want_labels)  # at the cap: the collator's own
    short = tokenizer(texts, padding=True, max_length=48, return_tensors="pt", return_special_tokens_mask=True)
    width = short["input_ids"].shape[1]
    cut_ids, cut_labels = mask_tokens(
        short["input_ids"], short["special_tokens_mask"], tokenizer, torch.Generator().manual_seed(3), 0.3, cap=48
    )
    assert width < 48 and torch.equal(cut_ids, want_ids[:, :width]) and torch.equal(cut_labels, want_labels[:, :width])


def _uniform(shape: torch.Size, call: int) -> torch.Tensor:
    """A uniform draw for every element that depends only on its coordinates and the call's number."""
    h = torch.full(tuple(shape), call * 0.6180339887498949, dtype=torch.float64)
    for d, n in enumerate(shape):
        view = [1] * len(shape)
        view[d] = n
        h = h + torch.arange(n, dtype=torch.float64).view(view) * (1.4142135623730951 + 2.718281828 * d)
    return torch.frac(torch.sin(h) * 43758.5453123).abs()


@contextlib.contextmanager
def coordinate_dropout() -> Iterator[None]:
    """Dropout whose mask is a function of each element's coordinates (and of the call's number),
    so a row's draws are the same however far its batch is padded: ``F.dropout`` (every
    ``nn.Dropout``) and the attention's own dropout (``scaled_dot_product_attention``, run here as
    its definition: softmax, dropout, product)."""
    calls = itertools.count()

    def dropout(x: torch.Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> torch.Tensor:
        if not training or p == 0.0:
            return x
        keep = (_uniform(x.shape, next(calls)) >= p).to(x.dtype)
        return x * keep / (1.0 - p)

    def attention(q: Any, k: Any, v: Any, attn_mask: Any = None, dropout_p: float = 0.0, is_causal: bool = False,
                  scale: float | None = None, enable_gqa: bool = False) -> torch.Tensor:  # fmt: skip
        scores = q @ k.transpose(-2, -1) * (scale if scale is not None else q.size(-1) ** -0.5)
        if attn_mask is not None:
            scores = (
                scores.masked_fill(~attn_mask, float("-inf")) if attn_mask.dtype == torch.bool else scores + attn_mask
            )
        probs = torch.softmax(scores, dim=-1)
        return dropout(probs, dropout_p) @ v if dropout_p else probs @ v

    with mock.patch.object(F, "dropout", dropout), mock.patch.object(F, "scaled_dot_product_attention", attention):
        yield


KNOBS = {  # each objective with its draws switched on (dropout stays on everywhere)
    "simcse": {"augmentation": "token_cutoff"},
    "medse": {"perturbation": "random_tokens", "augmentation": "token_shuffle"},
    "mixcse": {"augmentation": "random_crop"},
    # documents: longer than the 32 tokens of the others' cap
    **dict.fromkeys(("mlm", "note_category", "declutr"), {"max_length": 128}),
}


def _step(loss: Any, rows: Any, buckets: dict[str, Buckets], params: dict[str, Any]) -> tuple[dict, dict, list]:
    loss.use_buckets(buckets)
    batch = loss.assemble(rows, torch.Generator().manual_seed(5)) if rows is not None else None
    if batch is None:  # DeCLUTR: spans made in the step, from the rows' text
        batch = loss.prepare(objective_rows("declutr"), torch.Generator().manual_seed(5))
    widths = [v.shape[-1] for k, v in _walk(batch) if k == "input_ids"]
    with coordinate_dropout():
        parts = loss(batch)
        torch.stack(list(parts.values())).sum().backward()
    return {k: v.detach() for k, v in parts.items()}, take_grads(params), widths


def _walk(batch: Any) -> Iterator[tuple[str, torch.Tensor]]:
    if isinstance(batch, dict):
        for k, v in batch.items():
            yield from ([(k, v)] if isinstance(v, torch.Tensor) else _walk(v))


@pytest.mark.parametrize("objective", TRAINED)
def test_a_bucket_padded_step_equals_the_step_padded_to_its_longest_row(tiny_bert: Path, objective: str) -> None:
    method, encoder = method_and_encoder(tiny_bert, objective, **KNOBS.get(objective, {}))
    loss = method.build_loss(encoder)
    loss.bind(SimpleNamespace(classes=["a", "b", "c"]))
    encoder.model.train()
    loss.train()
    params = trainable_params(loss, encoder)
    rows = None if objective == "declutr" else loss.rows_of(objective_rows(objective, 16 if objective == "ct" else 13))
    groups = loss.width_groups() or {
        "text": SimpleNamespace(cap=encoder.max_length),
        "positives": SimpleNamespace(cap=32),
    }
    wide = {g: Buckets((group.cap,), group.cap) for g, group in groups.items()}  # each group padded to its cap
    want, want_grads, narrow = _step(loss, rows, {}, params)
    got, got_grads, padded = _step(loss, rows, wide, params)
    assert narrow != padded and all(w in {g.cap for g in groups.values()} for w in padded), (narrow, padded)
    assert want.keys() == got.keys()
    for k in want:
        assert float((want[k] - got[k]).abs().max()) <= TOLERANCE * max(1.0, float(want[k].abs().max())), k
    assert sum(bool(g.abs().sum()) for g in want_grads.values()) > 10
    for name, a in want_grads.items():
        assert float((a - got_grads[name]).abs().max()) <= TOLERANCE * max(1.0, float(a.abs().max())), name


@pytest.mark.parametrize("perturbation", ["none", "shuffle_pairs", "sentence_pooling"])
def test_medse_static_entity_slots_give_the_kept_entities_loss(tiny_bert: Path, perturbation: str) -> None:
    """Every row an entity slot (a captured step's static shapes), the rows without an entity
    masked out of eq. 2, gives the loss and gradients of the kept entities alone (dropout off:
    the slots are other rows of the entity encoder's input, so its draws would fall elsewhere)."""
    method, encoder = method_and_encoder(tiny_bert, "medse", perturbation=perturbation)
    loss = method.build_loss(encoder)
    encoder.model.train()
    loss.train()
    no_dropout(encoder.model, loss)
    params = trainable_params(loss, encoder)
    rows = loss.rows_of(objective_rows("medse"))
    out = []
    for static in (False, True):
        loss.use_static_shapes(static)
        batch = loss.assemble(rows, torch.Generator().manual_seed(2))
        assert len(batch["entity_rows"]) == (13 if static else int(batch["entity_keep"].sum()))
        with coordinate_dropout():
            parts = loss(batch)
            torch.stack(list(parts.values())).sum().backward()
        out.append(({k: v.detach() for k, v in parts.items()}, take_grads(params)))
    (want, want_grads), (got, got_grads) = out
    assert float(want["entity"]) > 0
    for k in want:
        assert float((want[k] - got[k]).abs().max()) <= TOLERANCE, k
    for name, a in want_grads.items():
        assert float((a - got_grads[name]).abs().max()) <= TOLERANCE * max(1.0, float(a.abs().max())), name


def test_medse_entity_slots_wider_than_a_short_batch(tiny_bert: Path) -> None:
    """A run's span width (one bucket for the whole run) may exceed a batch of short sentences:
    the extra positions are masked, and the entity embeddings are those of the batch's own width."""
    method, encoder = method_and_encoder(tiny_bert, "medse", perturbation="sentence_pooling")
    loss = method.build_loss(encoder)
    loss.eval()
    encoder.model.eval()
    rows = loss.rows_of(objective_rows("medse"))
    out = []
    for buckets in ({}, {"span": Buckets((32,), 32)}):
        loss.use_buckets(buckets)
        batch = loss.assemble(rows, torch.Generator().manual_seed(0))
        out.append((batch["span_index"].shape[1], loss.embed(batch).vectors["h_ent"]))
    (narrow, want), (wide, got) = out
    assert narrow < wide == 32 and float((want - got).abs().max()) <= TOLERANCE


@pytest.mark.parametrize("objective", ["mlm", "note_category"])
def test_mlm_static_masked_slots_give_the_exact_positions_loss(tiny_bert: Path, objective: str) -> None:
    """Room for a fixed count of masked positions (a captured step's static shapes: the padding
    positions' label -100) gives the loss and gradients of the masked positions alone; the slots
    depend on the batch's width, not on how many positions its draws masked."""
    method, encoder = method_and_encoder(tiny_bert, objective, max_length=128)
    loss = method.build_loss(encoder)
    loss.bind(SimpleNamespace(classes=["a", "b", "c"]))
    encoder.model.train()
    loss.train()
    params = trainable_params(loss, encoder)
    rows = loss.rows_of(objective_rows(objective, 13))
    out = []
    for static in (False, True):
        loss.use_static_shapes(static)
        batch = loss.assemble(rows, torch.Generator().manual_seed(4))
        masked = int((batch["labels"] != -100).sum())
        assert float(batch["mlm_total"]) == masked > 0
        slots = len(batch["mlm_chosen"])
        assert slots == (masked_slots(batch["labels"].numel(), 0.15) if static else masked) and slots >= masked
        assert int((batch["mlm_targets"] != -100).sum()) == masked
        with coordinate_dropout():
            parts = loss(batch)
            torch.stack(list(parts.values())).sum().backward()
        out.append(({k: v.detach() for k, v in parts.items()}, take_grads(params)))
    (want, want_grads), (got, got_grads) = out
    assert len(out) == 2 and slots > masked  # the static batch's room exceeds its draws
    for k in want:
        assert float((want[k] - got[k]).abs().max()) <= TOLERANCE * max(1.0, float(want[k].abs().max())), k
    assert sum(bool(g.abs().sum()) for g in want_grads.values()) > 10
    for name, a in want_grads.items():
        assert float((a - got_grads[name]).abs().max()) <= TOLERANCE * max(1.0, float(a.abs().max())), name


@pytest.mark.parametrize(("positions", "probability"), [(64 * 32, 0.15), (64 * 128, 0.15), (8 * 512, 0.3), (40, 0.15)])
def test_mlm_masked_slots_hold_the_binomial_count_but_once_in_a_billion(positions: int, probability: float) -> None:
    from scipy.stats import binom

    slots = masked_slots(positions, probability)
    assert slots == positions or slots % 64 == 0
    assert binom.sf(slots, positions, probability) <= 1e-9  # more masked positions than slots
    assert slots <= positions * probability + 7 * (positions * probability) ** 0.5 + 64  # not far above the bound


def test_medse_span_positions_are_each_entitys_tokens_in_order(tiny_bert: Path) -> None:
    """Each kept slot's positions are its span's tokens, start to end, then masked zeros (counted
    from the span's start, not sorted out of a mask); a placeholder slot holds position 0 alone."""
    method, encoder = method_and_encoder(tiny_bert, "medse")
    loss = method.build_loss(encoder)
    loss.use_static_shapes(True)
    rows = loss.rows_of(objective_rows("medse"))
    batch = loss.assemble(rows, torch.Generator().manual_seed(0))
    keep = batch["entity_keep"]
    assert bool(keep.any()) and not bool(keep.all())  # both kinds of slot
    for slot, row in enumerate(batch["entity_rows"].tolist()):
        index, valid = batch["span_index"][slot], batch["span_valid"][slot]
        start, end = int(rows.values["span_start"][row]), int(rows.values["span_end"][row])
        want = list(range(start, end)) if bool(keep[slot]) else [0]
        assert index[valid].tolist() == want and int(batch["span_lengths"][slot]) == len(want)
        assert not bool(index[~valid].any())
