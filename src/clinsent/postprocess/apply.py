"""Apply a method's post-processing to one eval set's embeddings (fitted on those sentences)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np


def _none(vectors: np.ndarray, seed: int, whitening_dims: int | None) -> np.ndarray:
    return vectors


def _whitening(vectors: np.ndarray, seed: int, whitening_dims: int | None) -> np.ndarray:
    from clinsent.postprocess.whitening import fit_whitening

    return fit_whitening(vectors, k=whitening_dims).transform(vectors)


def _flow(vectors: np.ndarray, seed: int, whitening_dims: int | None) -> np.ndarray:
    from clinsent.postprocess.flow import fit_flow, flow_transform

    flow, _ = fit_flow(vectors, seed=seed)
    return flow_transform(flow, vectors)


# name -> (vectors, seed, whitening_dims) -> the post-processed vectors
POSTPROCESS: dict[str, Callable[[np.ndarray, int, int | None], np.ndarray]] = {
    "none": _none,
    "whitening": _whitening,
    "flow": _flow,
}


def postprocess(vectors: np.ndarray, kind: str, seed: int = 0, whitening_dims: int | None = None) -> np.ndarray:
    """``none`` returns the vectors; ``whitening`` (keeping at most ``whitening_dims``
    dimensions) and ``flow`` fit on them and transform them."""
    if kind not in POSTPROCESS:
        raise ValueError(f"unknown postprocess {kind!r}; use one of {', '.join(POSTPROCESS)}")
    return POSTPROCESS[kind](vectors, seed, whitening_dims)
