"""OpenVINO int8 made under a quality bound: the most sensitive layers kept in f32 until it holds.

Static int8 (:func:`clinsent.embedding.openvino_backend._nncf_quantize`: NNCF, preset MIXED, the
transformer model type, SmoothQuant) costs a model what it costs: a SimCSE model trained 40 steps
on real notes lost 0.0070 Spearman on BIOSSES where the packaged MiniLM lost 0.0036. So int8 is
made under a bound (:class:`Bound`) instead of checked after the fact:

1. the whole graph is quantized and its quality measured; within the bound, that is the graph;
2. else the graph's matrix products are grouped by kind (:func:`kinds`) and the kinds ranked
   (the same product of every block is one kind: BERT's query, key, value, scores, context,
   attention output, feed-forward up and down) by the quality the graph has with that kind alone
   kept in f32 (NNCF's ignored scope), one quantization each;
3. the kinds are kept in f32 in that order, most helpful first, until the quality is within the
   bound;
4. of the last kind kept, the fewest blocks that still hold are found (each block kept alone is
   measured, then the shortest prefix of them, most helpful first, by bisection).

The bound is on data the user named where there is some (:func:`task_bound`: an eval set scored
from embeddings, e.g. the run's selection set: the drop of its headline metric), else on the
vectors themselves (:func:`distance_bound`: the mean cosine distance to the f32 vectors on a
held-back sample of the input, texts the calibration did not see). What was kept and the drop
measured go into the output's metadata (:class:`Made`).

Why our own loop and not NNCF's ``quantize_with_accuracy_control``: with SmoothQuant (which halves
MiniLM's int8 error here, 0.0027 mean cosine distance against 0.0080 without), NNCF's accuracy
restorer made the graph worse with every product it reverted (0.0027 to 0.18 to 0.84: the reverted
product keeps SmoothQuant's scaled weights beside an unscaled input), and without SmoothQuant
each revert moved the error by 2e-5. Keeping products out of the quantization (the ignored scope)
leaves SmoothQuant consistent for the ones quantized. Nor can a product's sensitivity be read off
one pass of the two graphs: SmoothQuant folds its scales into the layers before a product, so the
int8 graph's inner activations are not the f32 graph's; only the output is compared.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

Encode = Callable[[Any], np.ndarray]  # a compiled model -> the bound's texts' vectors


@dataclass(frozen=True)
class Bound:
    """What an int8 graph is held to: ``quality`` of its vectors of :attr:`texts` (higher is
    better), the f32 graph's against which the drop is measured, at most :attr:`max_drop`."""

    what: str  # shown in the log and the metadata, e.g. "mean cosine distance to f32 on 256 held-back texts"
    texts: list[str]
    quality: Callable[[np.ndarray], float]
    max_drop: float
    key: str  # what the int8 graph's cache entry depends on (the bound, its texts)


def distance_bound(texts: list[str], reference: np.ndarray, max_distance: float) -> Bound:
    """The vectors within ``max_distance`` mean cosine distance of ``reference`` (the f32 vectors of
    ``texts``): quality is the mean cosine similarity to them (1 for the f32 graph)."""
    import hashlib

    ref = reference / np.linalg.norm(reference, axis=1, keepdims=True)

    def quality(vectors: np.ndarray) -> float:
        v = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
        return float((v * ref).sum(1).mean())

    digest = hashlib.sha256("\0".join(texts).encode("utf-8")).hexdigest()[:16]
    return Bound(
        f"mean cosine distance to f32's vectors on {len(texts)} held-back texts of the input",
        texts,
        quality,
        max_distance,
        f"distance:{max_distance}:{digest}",
    )


def task_bound(task: Any, max_drop: float) -> Bound:
    """An eval set's headline metric (``task``: scored from embeddings) at most ``max_drop`` below
    the f32 graph's."""
    texts = task.texts()

    def quality(vectors: np.ndarray) -> float:
        metrics, _ = task.score_and_items(texts, vectors)
        return float(metrics[task.headline])

    return Bound(
        f"{task.headline} on eval set {task.set_name}", texts, quality, max_drop, f"set:{task.set_name}:{max_drop}"
    )


@dataclass(frozen=True)
class BoundSpec:
    """A bound before the f32 vectors exist: an eval set's task (``task``: its headline metric
    within ``max_drop``), else held-back texts of the input (``texts``: the mean cosine distance to
    f32's vectors within ``max_drop``)."""

    max_drop: float
    texts: tuple[str, ...] = ()
    task: Any = None

    def bound(self, f32_vectors: Callable[[list[str]], np.ndarray]) -> Bound:
        if self.task is not None:
            return task_bound(self.task, self.max_drop)
        texts = list(self.texts)
        return distance_bound(texts, f32_vectors(texts), self.max_drop)


@dataclass
class Made:
    """How an int8 graph was made under its bound (the output's metadata, ``clinsent.int8``)."""

    bound: str
    max_drop: float
    f32: float
    int8: float
    products: int  # the matrix products int8 may quantize
    kept_f32: list[str] = field(default_factory=list)
    quantizations: int = 1
    seconds: float = 0.0

    @property
    def drop(self) -> float:
        return self.f32 - self.int8

    def record(self) -> dict[str, Any]:
        return {
            "bound": self.bound,
            "max_drop": self.max_drop,
            "f32": round(self.f32, 6),
            "int8": round(self.int8, 6),
            "drop": round(self.drop, 6),
            "matrix_products": self.products,
            "kept_f32": self.kept_f32,
            "quantizations": self.quantizations,
            "seconds": round(self.seconds, 1),
        }


def products(model: Any) -> list[str]:
    """The matrix products of ``model`` (their friendly names) that int8 may quantize."""
    return [op.get_friendly_name() for op in model.get_ops() if op.get_type_name() == "MatMul"]


def kinds(names: Sequence[str]) -> dict[str, list[str]]:
    """The matrix products grouped by kind: their names with each block's number taken out
    (``encoder/layer.3/output/dense/MatMul`` is of kind ``encoder/layer.N/output/dense/MatMul``), in
    the order the graph has them."""
    out: dict[str, list[str]] = {}
    for name in names:
        out.setdefault(re.sub(r"\.\d+(?=/)", ".N", name), []).append(name)
    return out


def _fewest_blocks(
    before: list[str],
    blocks: list[str],
    attempt: Callable[[list[str]], tuple[Any, float]],
    holds: Callable[[float], bool],
    found: tuple[Any, float],
) -> tuple[Any, float, list[str]]:
    """Of the last kind kept, the fewest of its blocks that still hold the bound: each block kept
    alone (beside the kinds ``before``) is measured, the blocks ordered by the quality each gives,
    and the shortest prefix that holds found by bisection. ``found``: the graph with them all."""
    alone = {b: attempt([*before, b])[1] for b in blocks}
    order = sorted(blocks, key=lambda b: -alone[b])
    low, high = 0, len(order)  # keeping order[:high] holds; order[:low] (low 0: none of them) does not
    best = found
    while high - low > 1:
        mid = (low + high) // 2
        model, value = attempt([*before, *order[:mid]])
        if holds(value):
            high, best = mid, (model, value)
        else:
            low = mid
    return best[0], best[1], [*before, *order[:high]]


def quantize_within(
    f32: Any,
    bound: Bound,
    quantize: Callable[[Any, list[str]], Any],
    encode: Callable[[Any], np.ndarray],
    compile_model: Callable[[Any], Any],
    log: Callable[[str], Any] = print,
) -> tuple[Any, Made]:
    """The int8 graph of ``f32`` within ``bound`` (see the module). ``quantize(model, kept)``:
    NNCF's int8 of a copy of ``model`` with the products ``kept`` in f32; ``encode(model)``: the
    bound's texts' vectors by a compiled model."""
    start = time.perf_counter()
    reference = bound.quality(encode(compile_model(f32)))
    count = 0

    def attempt(kept: list[str]) -> tuple[Any, float]:
        nonlocal count
        count += 1
        model = quantize(f32, kept)
        return model, bound.quality(encode(compile_model(model)))

    def holds(value: float) -> bool:
        return reference - value <= bound.max_drop

    model, value = attempt([])
    made = Made(bound.what, bound.max_drop, reference, value, len(products(f32)))
    if not holds(value):
        log(
            f"int8 of the whole graph: {bound.what} {reference - value:.4f} below f32's, above the bound "
            f"{bound.max_drop}: keeping its most sensitive kinds of matrix product in f32 until it holds"
        )
        groups = kinds(products(f32))
        alone = {kind: attempt(names)[1] for kind, names in groups.items()}  # each kind kept in f32 by itself
        kept: list[str] = []
        last: list[str] = []
        for kind in sorted(alone, key=lambda k: -alone[k]):  # the kind whose keeping helps most, first
            last = groups[kind]
            kept += last
            model, value = attempt(kept)
            if holds(value):
                break
        if holds(value) and len(last) > 1:  # the last kind's blocks: the fewest that still hold
            model, value, kept = _fewest_blocks(kept[: len(kept) - len(last)], last, attempt, holds, (model, value))
        made.kept_f32 = kept
    made.int8, made.quantizations = value, count
    made.seconds = time.perf_counter() - start
    if not holds(value):  # every product kept: f32 in all but name; said, not hidden
        log(f"int8 could not hold {bound.what} within {bound.max_drop} ({made.drop:.4f}), every product in f32")
    return model, made
