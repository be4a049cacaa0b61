"""Base models: resolve a config entry to a path or hub id, load it, and save trained encoders
as sentence-transformers models that ``SentenceTransformer(path)`` loads with stock modules.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Any

from clinsent.errors import InputError
from clinsent.models.complete import check_complete

PACKAGE_PREFIX = "pkg:"


def looks_like_path(spec: str) -> bool:
    """A model entry written as a path: it starts with ``.``, ``/`` or ``~``, has a backslash, or
    has more than one ``/`` (a Hugging Face id is ``name`` or ``owner/name``). Such an entry is a
    local folder and never taken for a hub id, so a missing one is an error, not a download."""
    return spec.startswith((".", "/", "~")) or "\\" in spec or spec.count("/") > 1 or spec.endswith("/")


def from_hub(spec: str) -> bool:
    """Whether a model entry is fetched from the Hugging Face Hub: neither a package nor a path
    (whether the id fits the Hub's grammar is :func:`clinsent.config.names.is_hub_id`)."""
    return not spec.startswith(PACKAGE_PREFIX) and not Path(spec).expanduser().exists() and not looks_like_path(spec)


HUB_DIR_ENV = "CLINSENT_HUB_DIR"  # set by the Snakefile for every job: where download_model put each hub id


def hub_slug(spec: str) -> str:
    """The folder name of a Hugging Face id under ``hub_dir``: ``owner/name`` -> ``owner--name``."""
    return spec.replace("/", "--")


def resolve_model(spec: str, where: str = "config: base_models") -> str:
    """``pkg:<python package>/<folder>`` -> that folder inside the installed package;
    an existing local path -> itself; a Hugging Face id -> the folder the ``download_model``
    rule fetched it into (``$CLINSENT_HUB_DIR/<owner--name>``, a declared input of every job
    that loads it), else the id itself (transformers' own cache, outside the workflow). A folder
    is complete (weights, config, tokenizer) or refused, naming ``where``
    (:func:`clinsent.models.complete.check_complete`)."""
    found = _resolve(spec)
    if os.path.isdir(found):
        check_complete(found, where)
    return found


def _resolve(spec: str) -> str:
    if spec.startswith(PACKAGE_PREFIX):
        package, _, sub = spec[len(PACKAGE_PREFIX) :].partition("/")
        found = importlib.util.find_spec(package)
        if found is None or not found.submodule_search_locations:
            raise InputError(
                "config: base_models",
                f"python package {package!r} is not installed",
                f"pip install {package.replace('_', '-')} (or point the entry at a local folder)",
            )
        path = Path(list(found.submodule_search_locations)[0]) / sub
        if not path.exists():
            raise InputError("config: base_models", f"{path} does not exist", "check the folder inside the package")
        return str(path)
    if Path(spec).expanduser().exists():
        return str(Path(spec).expanduser())
    if looks_like_path(spec):
        raise InputError(
            "config: base_models",
            f"local model folder {spec} does not exist",
            "fix the path, or give a Hugging Face id such as dmis-lab/biobert-v1.1",
        )
    hub_dir = os.environ.get(HUB_DIR_ENV)
    if hub_dir and (Path(hub_dir) / hub_slug(spec)).is_dir():
        return str(Path(hub_dir) / hub_slug(spec))
    return spec


def load_tokenizer(spec: str) -> Any:
    """The base model's tokenizer alone (the ``tokens`` rule: no weights loaded)."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(resolve_model(spec))


def load_transformer(spec: str, max_length: int) -> Any:
    """A sentence-transformers ``Transformer`` module for the base model."""
    from sentence_transformers.sentence_transformer.modules import Transformer

    return Transformer(resolve_model(spec), max_seq_length=max_length)


def sentence_transformer(
    transformer: Any,
    pooling: str,
    first_layer: int = 1,
    device: str = "cpu",
    head: Any = None,
    normalize: bool = False,
) -> Any:
    """Wrap a (trained) Transformer module with the stock modules of its pooling
    (:data:`clinsent.models.pooling.POOLINGS`), so the saved model needs no custom code; a
    pooling that keeps its MLP at test time adds ``head`` (a shared ``MlpHead``) as a ``Dense``;
    ``normalize`` (the base model ends in ``Normalize``: :func:`clinsent.models.st_config.ends_normalized`)
    keeps that last module, as sentence-transformers keeps a model's modules when it trains one."""
    from sentence_transformers import SentenceTransformer, SentenceTransformerModelCardData
    from sentence_transformers.sentence_transformer.modules import Normalize

    from clinsent.models.pooling import POOLINGS

    if pooling not in POOLINGS:
        raise InputError("config: methods", f"unknown pooling {pooling!r}", f"use one of {', '.join(POOLINGS)}")
    modules = [transformer, *POOLINGS[pooling].saved_modules(transformer, first_layer)]
    if head is not None:
        modules.append(head.as_dense())
    if normalize:
        modules.append(Normalize())
    # the model card is written from what is local: no look-up of the base model on the Hub
    return SentenceTransformer(
        modules=modules, device=device, model_card_data=SentenceTransformerModelCardData(local_files_only=True)
    )
