"""The base of every method's loss: an ``nn.Module`` after sentence-transformers' losses.

A loss owns its extra modules (an MLP head, an entity encoder, a frozen twin), makes one step's
batch on the CPU and returns its loss as named parts (``forward``); the trainer sums the parts
and logs each as a curve column ``loss_<part>``. A method (:mod:`clinsent.methods.base`) builds
its loss in ``build_loss``, the one place that imports its loss module.

A step's batch is made one of two ways:

- ``assemble(rows, generator, alloc)``: from the step's rows as positions in token tables
  (:class:`clinsent.data.positions.StepRows`, the ``tokens`` rule's files): a gather and pad into
  the buffers ``alloc`` gives, the step's random draws, no tokenizer call for a text that does not
  change (:mod:`clinsent.data.tokens`). Its token widths come from the job's length buckets
  (:meth:`MethodLoss.width`, :mod:`clinsent.data.buckets`). ``rows_of(frame)`` tokenizes a frame of
  rows into the same positions (a test's rows, or a job without token files), so
  ``prepare(frame)`` is ``assemble(rows_of(frame))``: one path.
- ``prepare(rows, generator)`` alone (a plugin's loss): from the rows as a DataFrame, tokenized in
  the step's preparation.

A loss is written in two halves, so that a large batch can be stepped in chunks
(:mod:`clinsent.train.chunked`):

- ``embed(batch)`` runs the encoders over the rows of a (prepared) batch and returns an
  :class:`Embedded`: the per-row vectors the loss compares across the batch (``vectors``, e.g.
  SimCSE's two views), vectors computed without gradient (``fixed``, e.g. a frozen
  complementary model's) and loss parts that simply add up over rows (``parts``, e.g. an MLM
  loss already scaled to its chunk's share of the batch);
- ``score(vectors, batch)`` computes the loss parts that compare rows (InfoNCE over the batch)
  from every row's vectors.

``forward`` is ``embed`` then ``score`` on the whole batch. ``chunk(batch, rows)`` cuts a
prepared batch to a range of its rows (``rows(batch)`` of them), trimming padding no row of
the chunk needs.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import torch
from torch import nn

from clinsent.data.buckets import Buckets, Group
from clinsent.data.encode import TextEncoder
from clinsent.data.positions import Alloc, StepRows, fresh


@dataclass
class Embedded:
    """What ``embed`` gives for one batch or chunk (every tensor's first axis: rows of it)."""

    vectors: dict[str, torch.Tensor] = field(default_factory=dict)  # compared across the batch; gradients flow
    fixed: dict[str, torch.Tensor] = field(default_factory=dict)  # compared across the batch; no gradient
    parts: dict[str, torch.Tensor] = field(default_factory=dict)  # loss parts that add up over chunks


class MethodLoss(nn.Module):
    """A method's loss: owns its extra modules; ``assemble`` (or ``prepare``) makes a step's batch
    on the CPU, ``forward`` returns the named loss parts."""

    # whether a step of this loss can be captured as a CUDA graph (clinsent.train.graphs): its
    # forward reads no host value that changes from batch to batch (a count, a list)
    capturable = False
    # set by the trainer when the steps are captured (use_static_shapes): every batch of a shape
    # the same shapes throughout (MED-SE: an entity slot for every row, the kept ones masked;
    # MLM: room for a fixed count of masked positions)
    static_shapes = False
    # set by the trainer (use_grouped, ``grouped``): the loss's encoders run as one grouped pass
    # (clinsent.models.grouped; MED-SE's sentence and definition encoders, CT's twin and kept model)
    grouped = False
    pad_multiple: int | None = None  # without buckets, widths rounded up to a multiple of this (compile)
    # the width groups of a loss's batches (columns padded together share one: SimCSE's two views,
    # a triplet's three columns); the trainer gives each group its buckets (``buckets``), chosen
    # from the job's own batches (:mod:`clinsent.data.buckets`)
    buckets: dict[str, Buckets]

    def width_groups(self) -> dict[str, Group]:
        """Each group of token columns padded to one width (none: no token tables)."""
        return {}

    def widths(self, rows: StepRows) -> dict[str, int]:
        """Each group's longest row in ``rows`` (what a bucket must hold), known before the step."""
        return {}

    def use_buckets(self, buckets: Mapping[str, Buckets]) -> None:
        """Pad each width group's batches to its buckets, in this loss and the losses it holds
        (note category's MLM loss)."""
        for module in self.modules():
            if isinstance(module, MethodLoss):
                module.buckets = dict(buckets)

    def use_static_shapes(self, static: bool) -> None:
        """Every batch of a shape the same shapes throughout (a captured step), in this loss and the
        losses it holds (note category's MLM loss)."""
        for module in self.modules():
            if isinstance(module, MethodLoss):
                module.static_shapes = static

    def use_grouped(self, on: bool) -> str | None:
        """Run the encoders this loss trains side by side as one grouped pass (``grouped``:
        :mod:`clinsent.models.grouped`); returns why not where it cannot (here: one encoder)."""
        return f"{type(self).__name__} trains one encoder" if on else None

    def width(self, group: str, longest: int) -> int:
        """The padded width of a batch of ``group`` whose longest row has ``longest`` tokens: its
        bucket, or (no buckets) the longest row itself."""
        buckets = getattr(self, "buckets", {}).get(group)
        if buckets is not None and buckets.lengths:
            return buckets.width(longest)
        multiple = self.pad_multiple or 1  # a compiled step's few shapes without buckets
        return max(-(-int(longest) // multiple) * multiple, 1)

    def rows_of(self, frame: pd.DataFrame) -> StepRows:
        """``frame``'s rows tokenized as a step's positions (the path without token files)."""
        raise NotImplementedError(f"{type(self).__name__} makes its batches from frames (prepare)")

    def assemble(self, rows: StepRows, generator: torch.Generator, alloc: Alloc = fresh) -> dict[str, Any]:
        """One step's batch from its rows' positions, every random draw from ``generator`` (never
        the global generators, so a resumed job draws the same); arrays from ``alloc`` (reused
        buffers). The batch holds ``n``: its row count. A loss that only ``prepare``s gets the
        rows' frame."""
        return self.prepare(rows.rows(), generator)

    def prepare(self, rows: pd.DataFrame, generator: torch.Generator) -> dict[str, Any]:
        """One step's batch from its rows as a frame: tokenized here (:meth:`rows_of`), then
        :meth:`assemble`. The batch holds ``n``: its row count."""
        if type(self).assemble is MethodLoss.assemble:
            raise NotImplementedError(f"{type(self).__name__} defines neither prepare nor assemble")
        return self.assemble(self.rows_of(rows), generator)

    def assembles(self) -> bool:
        """Whether this loss makes its batches from token positions (else from frames)."""
        return type(self).assemble is not MethodLoss.assemble

    def bind(self, data: Any) -> None:
        """Called once with the job's training data before the optimiser is built: a loss whose
        modules depend on the data (e.g. a head over the documents' categories) builds them here."""

    def embed(self, batch: dict[str, Any], fixed: bool = True) -> Embedded:
        """The encoders over ``batch``'s rows (``fixed`` False: the no-gradient vectors may be
        left out, a chunk's second pass does not need them)."""
        raise NotImplementedError

    def score(self, vectors: Mapping[str, torch.Tensor], batch: dict[str, Any]) -> dict[str, torch.Tensor]:
        """The loss parts that compare rows, from the vectors (and fixed vectors) of every row."""
        return {}

    def forward(self, batch: dict[str, Any]) -> dict[str, torch.Tensor]:  # noqa: D102
        e = self.embed(batch)
        return {**e.parts, **self.score({**e.vectors, **e.fixed}, batch)}

    def rows(self, batch: dict[str, Any]) -> int:
        """How many rows ``chunk`` can cut ``batch`` into."""
        return int(batch["n"])

    def chunk(self, batch: dict[str, Any], start: int, stop: int) -> dict[str, Any]:
        """The prepared ``batch`` cut to rows ``start``..``stop - 1`` (what ``embed`` reads)."""
        raise NotImplementedError(f"{type(self).__name__} cannot be stepped in chunks")

    def statistics(self) -> dict[str, torch.Tensor]:
        """Figures of the last forward pass that are not losses (e.g. MixCSE's share of negatives
        its instance weights remove): logged beside the loss parts, curve columns ``stat_<name>``."""
        return {}


def take(
    features: Mapping[str, torch.Tensor], index: torch.Tensor | slice, mask: torch.Tensor | None = None
) -> dict[str, torch.Tensor]:
    """Rows ``index`` of a tokenized batch, its token axis cut to the longest of them (by its own
    ``attention_mask``, or ``mask`` when given): padding no chosen row needs is dropped."""
    rows = {k: v[index] for k, v in features.items() if k != "packing"}  # a chunk's packing is its own
    width = token_width(rows["attention_mask"] if mask is None else mask[index])
    return {k: v[:, :width] for k, v in rows.items()}


def token_width(mask: torch.Tensor) -> int:
    """The last real token's position + 1 over the rows of an attention mask (CPU tensors)."""
    if mask.numel() == 0:
        return 0
    real = mask.bool().any(dim=0).nonzero()
    return int(real.max()) + 1 if len(real) else 1


def gathered(
    tables: list[tuple[Any, np.ndarray]],
    width: int,
    alloc: Alloc,
    name: str = "",
    special: bool = False,
    repeat: int = 1,
) -> dict[str, torch.Tensor]:
    """A tokenized batch from token tables: each (table, rows) pair's rows gathered in turn into
    one ``[rows, width]`` pair of buffers (``input_ids``, ``attention_mask``; with ``special``,
    ``special_tokens_mask`` too), named ``name`` in ``alloc``; with ``repeat``, those rows
    ``repeat`` times over (SimCSE's two views of one batch: gathered once, then copied)."""
    n = sum(len(rows) for _, rows in tables)
    ids = alloc(f"{name}input_ids", (repeat * n, width), np.int64)
    mask = alloc(f"{name}attention_mask", (repeat * n, width), np.int64)
    spec = alloc(f"{name}special_tokens_mask", (repeat * n, width), np.int64) if special else None
    at = 0
    for table, rows in tables:
        part = slice(at, at + len(rows))
        table.gather(rows, width, ids[part], mask[part], spec[part] if spec is not None else None)
        at += len(rows)
    for k in range(1, repeat):  # a block copy, cheaper than gathering again
        for array in (ids, mask, spec):
            if array is not None:
                array[k * n : (k + 1) * n] = array[:n]
    out = {"input_ids": torch.from_numpy(ids), "attention_mask": torch.from_numpy(mask)}
    if spec is not None:
        out["special_tokens_mask"] = torch.from_numpy(spec)
    return out


_MADE = threading.Lock()


def own_text_encoder(owner: Any, attribute: str, tokenizer: Any, max_length: int) -> TextEncoder:
    """``owner``'s :class:`TextEncoder` of ``tokenizer`` at ``max_length``, kept in ``attribute``:
    made once, on first use, whichever thread asks first."""
    found = owner.__dict__.get(attribute)
    if found is None:
        with _MADE:
            found = owner.__dict__.get(attribute)
            if found is None:
                found = TextEncoder(tokenizer, max_length)
                owner.__dict__[attribute] = found
    return found


def block_rows(n: int, blocks: int, start: int, stop: int) -> torch.Tensor:
    """Row indices of rows ``start..stop-1`` in each of ``blocks`` stacked blocks of ``n`` rows
    (SimCSE's two views, supervised SimCSE's anchors, positives and negatives)."""
    return torch.cat([torch.arange(b * n + start, b * n + stop) for b in range(blocks)])
