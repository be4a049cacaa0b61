"""Export embeddings of an eval set's texts with a saved model: the layouts this pipeline writes
run through transformers alone (:mod:`clinsent.models.saved`, the same vectors as
``SentenceTransformer(path)`` with less start-up), any other through sentence-transformers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from clinsent.models.complete import check_complete


def load_model(path: str | Path, device: str | None = None) -> Any:
    """A saved model as a user would load it, ``SentenceTransformer(path)``; on CUDA when present."""
    import torch
    from sentence_transformers import SentenceTransformer

    check_complete(path, "model")  # a folder without its tokenizer would load and embed every text alike
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    return SentenceTransformer(str(path), device=device, local_files_only=True)


def load_encoder(path: str | Path, device: str | None = None) -> Any:
    """A saved model to embed with (``encode(texts, batch_size)``): the layouts this pipeline
    writes through transformers alone, any other as :func:`load_model`."""
    import torch

    from clinsent.models.saved import SavedEncoder, known_layout

    check_complete(path, "model")
    modules = known_layout(path)
    if modules is None:
        return load_model(path, device)
    return SavedEncoder(Path(path), modules, device or ("cuda" if torch.cuda.is_available() else "cpu"))


def embed_texts(model: Any, texts: list[str], batch_size: int = 64) -> pd.DataFrame:
    """One row per text (an eval set's distinct texts): id, text, vector (float32)."""
    vectors = np.asarray(model.encode(texts, batch_size=batch_size, convert_to_numpy=True), dtype=np.float32)
    return pd.DataFrame({"id": np.arange(len(texts), dtype=np.int32), "text": texts, "vector": list(vectors)})


def embeddings_table(df: pd.DataFrame, encode_seconds: float | None = None) -> pa.Table:
    """Arrow table with the vector as fixed_size_list<float32>; ``encode_seconds`` (the time the
    model took to encode the texts) is kept in the schema's metadata (:func:`encode_seconds`)."""
    dim = len(df["vector"].iloc[0]) if len(df) else 0
    flat = np.concatenate(df["vector"].to_list()).astype(np.float32) if len(df) else np.zeros(0, np.float32)
    vec = pa.FixedSizeListArray.from_arrays(pa.array(flat, type=pa.float32()), dim)
    table = pa.table({"id": pa.array(df["id"], pa.int32()), "text": pa.array(df["text"], pa.string()), "vector": vec})
    if encode_seconds is None:
        return table
    return table.replace_schema_metadata({ENCODE_SECONDS: f"{encode_seconds:.6f}"})


ENCODE_SECONDS = "clinsent.encode_seconds"


def encode_seconds(path: str | Path) -> float | None:
    """The encoding time an embeddings file records (None for a file written without it)."""
    import pyarrow.parquet as pq

    value = (pq.read_schema(path).metadata or {}).get(ENCODE_SECONDS.encode())
    return float(value) if value is not None else None


def read_embeddings(path: str | Path) -> tuple[list[str], np.ndarray]:
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    texts = table.column("text").to_pylist()
    vec = table.column("vector").combine_chunks()
    dim = vec.type.list_size
    return texts, vec.flatten().to_numpy().reshape(-1, dim)
