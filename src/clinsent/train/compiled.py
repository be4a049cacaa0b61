"""The whole training step's forward compiled (the ``compile`` knob): encoder, pooling, loss and
the loss's own encoders (MED-SE's definition encoder, CT's twin, MixCSE's complementary model)
traced by ``torch.compile`` as one graph, and back-propagated through the graph AOTAutograd
derives from it.

Every objective's step traces as one graph with no break (tests/train/test_compiled.py, with
``fullgraph=True``): the steps have no host sync (:mod:`clinsent.train.syncs`), which would
break the graph too. Two things make that hold here:

- a job's batches are padded to its length buckets (:mod:`clinsent.data.buckets`), so a job
  compiles a handful of shapes, not one per longest sentence (padding is masked: the same
  embeddings; with dropout on, its masks are drawn over the padded shape, so curves differ from
  an unbucketed run's in their draws, not in distribution); a batch tokenized in the step (a
  frame without token files) is padded to a multiple of :data:`BUCKET`;
- transformers installs its output-capturing hooks on a model's first forward, under a lock
  that Dynamo cannot trace; they are installed here, before the first compiled step.

Steps cut into chunks (``mini_batch``, ``accumulate``: :mod:`clinsent.train.chunked`) call the
loss's halves one chunk at a time and stay eager. ``compile_mode`` is torch.compile's mode
(``default`` or ``max-autotune``); a CUDA graph of the whole step, optimiser included, is the
``graphs`` knob's (:mod:`clinsent.train.graphs`), with or without compile. Compilation is lazy:
the first step of each shape pays it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import torch

from clinsent.losses.base import MethodLoss
from clinsent.models.encoder import Encoder

BUCKET = 16  # a batch tokenized in the step is padded to a multiple of this when the step is compiled
MODES = ("default", "max-autotune")


def encoders_of(module: torch.nn.Module, encoder: Encoder) -> Iterator[Encoder]:
    """``encoder`` and every encoder a loss holds (attributes of it or of its submodules)."""
    seen = [encoder]
    for sub in module.modules():
        seen += [v for v in vars(sub).values() if isinstance(v, Encoder) and all(v is not e for e in seen)]
    yield from seen


def compile_loss(
    loss: torch.nn.Module, encoder: Encoder, mode: str = "default", backend: str = "inductor", fullgraph: bool = False
) -> Callable[[dict[str, Any]], dict[str, torch.Tensor]]:
    """``loss``'s forward compiled (a batch without length buckets padded to :data:`BUCKET`). ``fullgraph`` makes a
    graph break an error (the tests); the trainer leaves it off, so a user's plugin loss that
    breaks the graph still trains, in pieces."""
    for module in loss.modules():  # a batch without length buckets: padded to multiples of BUCKET
        if isinstance(module, MethodLoss):
            module.pad_multiple = BUCKET
    for enc in encoders_of(loss, encoder):
        _install_output_hooks(enc.model)
    compiled: Callable[[dict[str, Any]], dict[str, torch.Tensor]] = torch.compile(
        loss, mode=None if mode == "default" else mode, backend=backend, fullgraph=fullgraph
    )
    return compiled


def _install_output_hooks(model: Any) -> None:
    try:  # transformers >= 5: the hooks that collect hidden states, normally installed on the first call
        from transformers.utils.output_capturing import maybe_install_capturing_hooks
    except ImportError:  # older transformers collect hidden states without hooks
        return
    maybe_install_capturing_hooks(model)
