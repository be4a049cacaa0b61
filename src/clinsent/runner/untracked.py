"""A job's setting that changes none of its outputs (:class:`Untracked`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Untracked(Generic[T]):
    """A setting a job reads that changes none of its outputs (its progress lines, its trackers,
    the words of a model card, where its cache lives), passed in its params: Snakemake compares a
    job's params by the repr of builtin values only, so this one, an object of ours, never
    reruns the job when it changes. Everything else a job reads is a param it is rerun for."""

    value: T
