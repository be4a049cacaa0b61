"""Apply a method's post-processing to one eval set's embeddings (fitted on those sentences)."""

from __future__ import annotations

import numpy as np

POSTPROCESS = ("none", "whitening", "flow")


def postprocess(vectors: np.ndarray, kind: str, seed: int = 0, whitening_dims: int | None = None) -> np.ndarray:
    """``none`` returns the vectors; ``whitening`` (keeping at most ``whitening_dims``
    dimensions) and ``flow`` fit on them and transform them."""
    if kind == "none":
        return vectors
    if kind == "whitening":
        from clinsent.postprocess.whitening import fit_whitening

        return fit_whitening(vectors, k=whitening_dims).transform(vectors)
    if kind == "flow":
        from clinsent.postprocess.flow import fit_flow, flow_transform

        flow, _ = fit_flow(vectors, seed=seed)
        return flow_transform(flow, vectors)
    raise ValueError(f"unknown postprocess {kind!r}; use one of {', '.join(POSTPROCESS)}")
