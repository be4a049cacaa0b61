"""Base models: resolve a config entry to a path or hub id, load it, and save trained encoders
as sentence-transformers models that ``SentenceTransformer(path)`` loads with stock modules.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import torch

from clinsent.errors import InputError

PACKAGE_PREFIX = "pkg:"


def resolve_model(spec: str) -> str:
    """``pkg:<python package>/<folder>`` -> that folder inside the installed package;
    an existing local path -> itself; anything else is a Hugging Face hub id (downloaded
    by transformers when online)."""
    if spec.startswith(PACKAGE_PREFIX):
        package, _, sub = spec[len(PACKAGE_PREFIX):].partition("/")
        found = importlib.util.find_spec(package)
        if found is None or not found.submodule_search_locations:
            raise InputError("config: base_models", f"python package {package!r} is not installed",
                             f"pip install {package.replace('_', '-')} (or point the entry at a local folder)")
        path = Path(list(found.submodule_search_locations)[0]) / sub
        if not path.exists():
            raise InputError("config: base_models", f"{path} does not exist", "check the folder inside the package")
        return str(path)
    if Path(spec).expanduser().exists():
        return str(Path(spec).expanduser())
    if spec.startswith((".", "/", "~")):
        raise InputError("config: base_models", f"local model folder {spec} does not exist",
                         "fix the path, or give a Hugging Face id such as dmis-lab/biobert-v1.1")
    return spec


def load_transformer(spec: str, max_length: int) -> Any:
    """A sentence-transformers ``Transformer`` module for the base model."""
    from sentence_transformers.sentence_transformer.modules import Transformer

    return Transformer(resolve_model(spec), max_seq_length=max_length)


def sentence_transformer(transformer: Any, pooling: str, first_layer: int = 1, device: str = "cpu") -> Any:
    """Wrap a (trained) Transformer module with stock poolings equal to :func:`clinsent.models.pooling.pool`.

    ``first_last`` becomes a ``WeightedLayerPooling`` that weighs layer ``first_layer`` and the
    last layer 1:1 (all others 0) followed by mean pooling, so the saved model needs no custom code.
    """
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Pooling, WeightedLayerPooling

    dim = transformer.get_embedding_dimension()
    modules: list[Any] = [transformer]
    if pooling == "first_last":
        n_layers = transformer.model.config.num_hidden_layers
        weights = torch.zeros(n_layers + 1 - first_layer)
        weights[0] = 1.0
        weights[-1] = 1.0
        transformer.model.config.output_hidden_states = True
        modules.append(WeightedLayerPooling(dim, n_layers, first_layer, torch.nn.Parameter(weights, requires_grad=False)))
        modules.append(Pooling(dim, "mean"))
    elif pooling in ("cls", "cls_before_pooler", "mean"):
        modules.append(Pooling(dim, "mean" if pooling == "mean" else "cls"))  # cls: the MLP is training-only
    else:
        raise InputError("config: methods", f"unknown pooling {pooling!r}",
                         "use cls, cls_before_pooler, mean or first_last")
    return SentenceTransformer(modules=modules, device=device)
