"""The knobs every method shares, as settings dataclasses (fields made with
:func:`clinsent.config.declare.knob`: each default and description written once): how sentences become
vectors (:class:`MethodSettings`, the untrained baseline's too), how a trained method optimises,
selects and checkpoints (:class:`TrainedSettings`), and how a method trained on the sentence
sets draws its batches (:class:`SentencePlanSettings`). A method's own settings extend these.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from clinsent.config.declare import knob
from clinsent.gpu.precision import ALIASES as PRECISION_ALIASES
from clinsent.gpu.precision import PRECISION_DOC, Precision
from clinsent.gpu.speed import Auto

Pooling = Literal["cls", "cls_mlp", "cls_before_pooler", "mean", "first_last", "model"]
TRAINED_HEAD_POOLINGS = ("cls_mlp",)  # poolings whose MLP is part of the model: only a trained objective has one


@dataclass(frozen=True)
class MethodSettings:
    """Knobs every method has (the untrained baseline too): how sentences become vectors."""

    pooling: Pooling = knob(
        "first_last",
        "cls (SimCSE-family objectives train it through an MLP that is not saved), "
        "cls_mlp (that MLP trained and kept at test: SimCSE's supervised recipe), "
        "cls_before_pooler, mean, first_last (mean of layer first_layer and the last), "
        "model (the base model's own sentence-transformers pooling, cls or mean: "
        "clinsent.models.st_config)",
    )
    first_layer: int = knob(1, "first layer of first_last; 0 is the embedding layer (SimCSE's early code)", minimum=0)
    max_length: int = knob(128, "tokens per sentence", minimum=8)
    eval_batch_size: int = knob(64, "batch size when the trainer embeds the curve sets", minimum=1)


@dataclass(frozen=True)
class TrainedSettings(MethodSettings):
    """Knobs of every trained method: optimisation, schedule, step selection and checkpoints."""

    steps: int = knob(2000, "training steps", minimum=0)
    epochs: float | None = knob(
        None,
        "instead of steps: passes over a sentence corpus (steps = ceil(epochs x "
        "corpus size / batch_size), derived when the config is read) or over training "
        "rows (epochs x full batches, derived when the train job reads them)",
        exclusiveMinimum=0,
    )
    batch_size: int = knob(32, "rows (sentences, pairs, triplets) per batch", minimum=2)
    learning_rate: float = knob(3e-5, "peak learning rate; linear decay to 0", exclusiveMinimum=0)
    optimizer: Literal["adamw", "rmsprop"] = knob("adamw", "adamw (weight decay 0; fused) or rmsprop")
    warmup_ratio: float = knob(0.0, "share of the steps with a linear warm-up", minimum=0, maximum=1)
    grad_clip: float = knob(
        1.0, "clip the gradient norm to this (SimCSE's HF Trainer: 1.0); 0 switches it off", minimum=0
    )
    eval_every: int = knob(25, "evaluate the curve sets every n steps (and at the last)", minimum=1)
    checkpoint_every: int = knob(250, "checkpoint every n steps (resumed after a kill); 0: none", minimum=0)
    dropout: bool = knob(True, "train with dropout (false: ConSERT's augmentations, the original CT)")
    compile: bool | Auto = knob(
        "auto",
        "torch.compile the whole step's forward (encoder, pooling, loss, the loss's own "
        "encoders) as one graph, one per length bucket (length_buckets); "
        "steps in chunks (mini_batch, accumulate) stay eager. auto: on for an objective where a GPU check "
        "measured it faster with its CUDA tests passed (clinsent.gpu.speed), off on the CPU; a compile_mode "
        "turns it on",
    )
    compile_mode: Literal["default", "max-autotune"] = knob(
        "default",
        "torch.compile's mode with compile on (a CUDA graph of each shape's whole step: graphs)",
        aliases={"reduce-overhead": "default, with graphs: true (the whole step captured as a CUDA graph)"},
    )
    graphs: bool | Auto = knob(
        "auto",
        "speed, CUDA: capture each batch shape's whole step (forward, loss, backward, clipping, "
        "fused AdamW) as a CUDA graph the second time the shape is seen, and replay it "
        "(clinsent.train.graphs; with unpad, the packed tokens padded to a few fixed counts per "
        "bucket); the CPU, chunked steps (mini_batch, accumulate), fp16, "
        "gradient_checkpointing, rmsprop and the objectives whose step reads host values (declutr, "
        "MED-SE's bilstm) stay eager, saying why. auto: on for an objective where a GPU check "
        "measured it faster with its CUDA tests passed (clinsent.gpu.speed), off on the CPU",
    )
    length_buckets: int | tuple[int, ...] = knob(
        4,
        "pad each batch's tokens to one of a few lengths, so a job's steps take few shapes "
        "(clinsent.data.buckets): a count (the lengths chosen from the job's own batches, fewest "
        "padded tokens) or the lengths; 0: each batch to its own longest row. "
        "Padding is masked: the same embeddings, dropout's draws over another shape",
        json={
            "anyOf": [
                {"type": "integer", "minimum": 0, "maximum": 64},
                {"type": "array", "items": {"type": "integer", "minimum": 1}, "minItems": 1},
            ]
        },
    )
    precision: Precision = knob("auto", PRECISION_DOC, aliases=PRECISION_ALIASES)
    mini_batch: int | None = knob(
        None,
        "memory: embed the batch in chunks of this many rows, without gradients, "
        "compute the loss over all of them, then re-run each chunk with gradients "
        "and the same dropout masks (GradCache): every in-batch negative kept, the "
        "full batch's gradients (equal with deterministic views, equal in "
        "distribution with dropout), the memory of one chunk; objectives with "
        "in-batch negatives; null or >= batch_size: one pass",
        minimum=1,
    )
    accumulate: int = knob(
        1,
        "accumulate the gradients of this many micro-batches into one step (batch_size rows in "
        "all, the full batch's gradient); objectives without in-batch negatives (mlm, "
        "note_category; the others: mini_batch)",
        minimum=1,
    )
    gradient_checkpointing: bool = knob(
        False,
        "memory: recompute each encoder layer's activations in the backward "
        "pass (transformers' own; dropout replayed, so the same gradients) "
        "instead of storing them: about a third more compute",
    )
    unpad: bool | Auto = knob(
        "auto",
        "speed: every encoder layer's projections, feed-forward and layer norms run on the "
        "batch's real tokens only, attention on the padded layout with its mask and dropout "
        "(BERT-architecture encoders; clinsent.models.unpadded). Eval-mode embeddings equal the "
        "padded forward's within 1e-5; dropout masks fall on another layout, so curves differ "
        "by dropout noise. auto: on for an objective where a GPU check measured it faster with its CUDA "
        "tests passed (clinsent.gpu.speed), off on the CPU and with gradient_checkpointing; "
        "varlen_attention turns it on",
    )
    grouped: bool | Auto = knob(
        "auto",
        "speed: the encoders an objective trains side by side (MED-SE's sentence and trained "
        "definition encoders, CT's twin and kept model) run as one grouped pass: each linear layer one grouped matrix "
        "product over both encoders' rows, attention per encoder (clinsent.models.grouped), so "
        "a step dispatches the operators of about one encoder. The same function within 1e-5; "
        "dropout's masks fall on another layout. On CUDA: bf16, compute capability 9.0 or more. auto: "
        "on for an objective where a GPU check measured it faster with its CUDA tests passed "
        "(clinsent.gpu.speed), off on the CPU and with gradient_checkpointing",
    )
    varlen_attention: bool = knob(
        False,
        "with unpad, on CUDA: torch's variable-length flash attention over the "
        "packed tokens (no padding anywhere). A departure: that kernel has no "
        "attention-probability dropout, part of SimCSE's noise (fidelity page); on "
        "the CPU attention stays padded, with dropout",
    )


@dataclass(frozen=True)
class SentencePlanSettings:
    """Knobs of methods trained on the sentence sets through a batch plan."""

    corpus: Literal["s_all", "s_ent", "s_none"] = knob("s_all", "training sentences: S_all, S_ent or S_none")
    none_share: float = knob(
        0.0,
        "with s_ent: exactly round(share x batch) S_none sentences per batch; 1: S_none alone",
        minimum=0,
        maximum=1,
    )
    duplicates: Literal["naive", "remove", "replace"] = knob(
        "naive", "duplicate entities in a batch: naive, remove (the batch shrinks) or replace"
    )
    sentences: str = knob(
        "notes",
        "the sentence source: notes (the notes pipeline's sets) or a key of "
        "sentence_corpora (plain sentences: corpus s_all only)",
    )
    fraction: float = knob(
        1.0,
        "train on this share of the corpus (a fixed, nested subset), same number of steps "
        "(the augmentation paper's Figure 1)",
        exclusiveMinimum=0,
        maximum=1,
    )
