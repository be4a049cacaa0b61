"""A prepared batch as a tree, walked one way by everything that walks one.

A batch is nested dicts, lists and tuples; records (dataclasses registered with :func:`record`:
the unpadded forward's packing) are inner nodes too, their fields its children; tensors and every
other value (a count, a token table) are leaves. The captured step's signature, copies to the
device and refills (:mod:`clinsent.train.graphs`), the pinning (:func:`clinsent.train.prefetch.pinned`),
the packings' attachment (:func:`clinsent.models.unpadded.attach`) and the bench's token counts
walk it here, so a new kind of node is added once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import fields, replace
from typing import Any, TypeVar

import torch

T = TypeVar("T")
_RECORDS: tuple[type, ...] = ()


def record(cls: type[T]) -> type[T]:
    """Register the dataclass ``cls`` as a record a batch may carry (an inner node)."""
    global _RECORDS
    _RECORDS = (*_RECORDS, cls)
    return cls


def is_record(value: Any) -> bool:
    return isinstance(value, _RECORDS)


def leaves(tree: Any) -> list[tuple[str, Any]]:
    """(path, leaf) of every leaf of ``tree``, in a fixed order: two batches made alike give their
    leaves in the same order (a captured step keys its graphs by them, once a step)."""
    out: list[tuple[str, Any]] = []

    def collect(value: Any, path: str) -> None:
        if isinstance(value, dict):
            for k in sorted(value, key=str):
                collect(value[k], f"{path}.{k}")
        elif type(value) in (list, tuple):
            for i, v in enumerate(value):
                collect(v, f"{path}[{i}]")
        elif is_record(value):
            for f in fields(value):
                collect(getattr(value, f.name), f"{path}.{f.name}")
        else:
            out.append((path, value))

    collect(tree, "")
    return out


def zipped(a: Any, b: Any, visit: Callable[[torch.Tensor, Any], object]) -> None:
    """``visit(x, y)`` for every tensor ``x`` of ``a`` and the value ``y`` at its place in ``b``, a
    tree of the same shape (a captured step's inputs refilled from a batch, once a step)."""
    if isinstance(a, torch.Tensor):
        visit(a, b)
    elif isinstance(a, dict):
        for k, v in a.items():
            zipped(v, b[k], visit)
    elif type(a) in (list, tuple):
        for x, y in zip(a, b, strict=True):
            zipped(x, y, visit)
    elif is_record(a):
        for f in fields(a):
            zipped(getattr(a, f.name), getattr(b, f.name), visit)


def mapped(tree: Any, fn: Callable[[torch.Tensor], torch.Tensor]) -> Any:
    """``tree`` with every tensor ``t`` replaced by ``fn(t)`` (its dicts, lists, tuples and records
    made anew; other leaves kept)."""
    if isinstance(tree, torch.Tensor):
        return fn(tree)
    if isinstance(tree, dict):
        return {k: mapped(v, fn) for k, v in tree.items()}
    if type(tree) in (list, tuple):
        return type(tree)(mapped(v, fn) for v in tree)
    if is_record(tree):
        return replace(tree, **{f.name: mapped(getattr(tree, f.name), fn) for f in fields(tree)})
    return tree


def dicts(tree: Any) -> Iterator[dict[Any, Any]]:
    """Every dict of ``tree``, each before its children (which are read after the caller has had
    it: a key added to it is walked too)."""
    if isinstance(tree, dict):
        yield tree
        children: Any = list(tree.values())
    elif type(tree) in (list, tuple):
        children = tree
    elif is_record(tree):
        children = [getattr(tree, f.name) for f in fields(tree)]
    else:
        return
    for child in children:
        yield from dicts(child)
