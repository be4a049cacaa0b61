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
_RECORDS: list[type] = []


def record(cls: type[T]) -> type[T]:
    """Register the dataclass ``cls`` as a record a batch may carry (an inner node)."""
    _RECORDS.append(cls)
    return cls


def is_record(value: Any) -> bool:
    return isinstance(value, tuple(_RECORDS))


def _children(value: Any) -> Iterator[tuple[str, Any]] | None:
    """(key, child) of an inner node, in a fixed order (a dict's keys sorted); None for a leaf."""
    if isinstance(value, dict):
        return ((f".{k}", value[k]) for k in sorted(value, key=str))
    if type(value) in (list, tuple):
        return ((f"[{i}]", v) for i, v in enumerate(value))
    if is_record(value):
        return ((f".{f.name}", getattr(value, f.name)) for f in fields(value))
    return None


def leaves(tree: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """(path, leaf) of every leaf of ``tree``, in a fixed order: two batches made alike give their
    leaves in the same order."""
    children = _children(tree)
    if children is None:
        yield path, tree
        return
    for key, child in children:
        yield from leaves(child, path + key)


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
    children = _children(tree)
    for _, child in list(children) if children is not None else ():
        yield from dicts(child)
